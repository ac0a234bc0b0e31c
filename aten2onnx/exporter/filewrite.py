"""New files written at the disk's speed, in bounded memory: the pieces of a file (bytes, or tensors in
ONNX's raw_data layout) go through a few page-aligned staging buffers. The calling thread fills one,
copying each tensor into it (a transposed weight is transposed as it is copied, with no copy of its own),
while a writer thread hashes and writes the one filled before. So reading a weight, transposing it,
hashing and writing overlap, and the memory this takes is the buffers' (BUFFERS x BUFFER_BYTES) whatever
the file's size.

On Linux the file is opened with O_DIRECT where its filesystem takes it: the data goes from the buffers to
the disk without passing through the page cache. A buffered write of gigabytes runs at whatever pace the
kernel's dirty-page throttling allows (on one machine here it ranged from 0.6 to 5.4 s for the same
2.8 GB), then waits again in fsync; O_DIRECT's pace is the disk's. Where the filesystem refuses O_DIRECT
(tmpfs, or a write it cannot take), the file is written buffered, as elsewhere than Linux.
"""

from __future__ import annotations

import errno
import mmap
import os
import queue
import secrets
import threading
from typing import Any, Callable, Iterable

import torch

from aten2onnx import _dtypes
from aten2onnx.ir.builder import tensor_view

BUFFER_BYTES = 32 << 20
BUFFERS = 4  # one being filled, one hashed, one written, one spare
TRANSPOSE_ROWS = 32
ALIGN = 4096  # O_DIRECT's alignment of addresses, sizes and offsets (a page: any block size up to it)
_O_DIRECT = getattr(os, "O_DIRECT", 0)


def write_new(folder: str, pieces: Iterable[Any], *, digest: Any = None,
              advance: Callable[[int], Any] | None = None) -> str:
    """A new file in folder (a hidden temporary name) holding the pieces in order, flushed to disk; its
    path. pieces: bytes-like objects, or tensors (written as tensor_view gives their bytes; a tensor need
    not be contiguous). digest: a hashlib object updated with the file's bytes. advance: called with the
    bytes of each piece as it is taken. The mode follows the umask (0666 & ~umask), as any file a program
    creates (mkstemp would make it 0600). A failure removes the file and raises."""
    while True:
        path = os.path.join(folder, f".aten2onnx-{secrets.token_hex(8)}.tmp")
        try:
            fd, direct = _open_new(path)
            break
        except FileExistsError:
            continue
    try:
        with _Staging(fd, direct, digest) as staging:
            for piece in pieces:
                staging.put(piece, advance)
        os.fsync(fd)
    except BaseException:
        os.close(fd)
        os.unlink(path)
        raise
    os.close(fd)
    return path


def _open_new(path: str) -> tuple[int, bool]:
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0)
    if _O_DIRECT:
        try:
            return os.open(path, flags | _O_DIRECT, 0o666), True
        except OSError as e:
            if e.errno != errno.EINVAL:  # (EINVAL: the filesystem takes no O_DIRECT)
                raise
    return os.open(path, flags, 0o666), False


class _Staging:
    """The staging buffers, and the threads that hash and write them: filled buffers go to the hasher (where
    there is a digest), then to the writer, then back to be filled."""

    def __init__(self, fd: int, direct: bool, digest: Any) -> None:
        self.fd, self.direct, self.digest = fd, direct, digest
        self.free: queue.Queue = queue.Queue()
        self.full: queue.Queue = queue.Queue()
        self.hashed: queue.Queue = queue.Queue() if digest is not None else self.full
        for _ in range(BUFFERS):
            buffer = mmap.mmap(-1, BUFFER_BYTES)  # page-aligned, as O_DIRECT needs
            self.free.put((memoryview(buffer), torch.frombuffer(buffer, dtype=torch.uint8)))
        self.current: tuple[memoryview, torch.Tensor] | None = None
        self.used = 0
        self.size = 0  # bytes handed on
        self.error: BaseException | None = None
        self.threads = [threading.Thread(target=self._stage, args=(self.full, self.hashed, self._hash), daemon=True,
                                         name="aten2onnx-hasher")] if digest is not None else []
        self.threads.append(threading.Thread(target=self._stage, args=(self.hashed, self.free, self._write),
                                             daemon=True, name="aten2onnx-writer"))

    def __enter__(self) -> _Staging:
        for thread in self.threads:
            thread.start()
        return self

    def __exit__(self, kind: Any, value: Any, traceback: Any) -> None:
        try:
            if kind is None and self.used:
                self._hand_over()
        finally:
            self.full.put(None)  # (passed on from stage to stage)
            for thread in self.threads:
                thread.join()
            self.current = None  # (the buffers are unmapped with their last reference)
        if kind is None and self.error is not None:
            raise self.error
        if kind is None and self.direct and self.size % ALIGN:
            os.ftruncate(self.fd, self.size)  # (the last block was written whole)

    # -- the calling thread: filling ------------------------------------------------------------------
    def put(self, piece: Any, advance: Callable[[int], Any] | None) -> None:
        if isinstance(piece, torch.Tensor):
            if (piece.dtype in _dtypes.PACKED or piece.device.type != "cpu" or piece.dim() < 2 or piece.numel() == 0
                    or piece.is_contiguous()):
                data = tensor_view(piece)
                self._put_bytes(data)
                nbytes = data.nbytes
            else:
                threads = torch.get_num_threads()
                # torch's copies leave a core to the hasher (on 2 cores, two copying threads and the hasher
                # would take turns); what computes the pieces between them keeps every thread
                torch.set_num_threads(max(1, threads - 1) if self.digest is not None else threads)
                try:
                    self._put_rows(piece.detach())
                finally:
                    torch.set_num_threads(threads)
                nbytes = piece.numel() * piece.element_size()
        else:
            data = memoryview(piece).cast("B")
            self._put_bytes(data)
            nbytes = data.nbytes
        if advance is not None:
            advance(nbytes)

    def _room(self) -> int:
        if self.current is None:
            self.current = self._take_free()
        return BUFFER_BYTES - self.used

    def _put_bytes(self, data: memoryview) -> None:
        done = 0
        while done < data.nbytes:
            n = min(self._room(), data.nbytes - done)
            self.current[0][self.used:self.used + n] = data[done:done + n]
            self.used += n
            done += n
            if self.used == BUFFER_BYTES:
                self._hand_over()

    def _put_rows(self, tensor: torch.Tensor) -> None:
        """A tensor that is not contiguous (a weight stored transposed), copied a block of rows of its first
        dim at a time into the buffers, laid out as its contiguous copy would be."""
        row = tensor[0].numel() * tensor.element_size()
        # a transposed matrix goes a few rows at a time through torch's blocked transpose (which takes a
        # whole matrix only): 4x the speed of copying its strided rows
        transposed = tensor.dim() == 2 and tensor.stride(0) == 1 and tensor.shape[1] >= TRANSPOSE_ROWS
        start, rows = 0, tensor.shape[0]
        while start < rows:
            room = self._room()
            fit = min(room // row, rows - start)
            if fit == 0 or self.used % tensor.element_size():  # a row across two buffers: one row's copy
                self._put_bytes(tensor_view(tensor[start:start + 1]))
                start += 1
                continue
            target = self.current[1][self.used:self.used + fit * row].view(tensor.dtype).view(fit, *tensor.shape[1:])
            if transposed:
                for at in range(0, fit, TRANSPOSE_ROWS):
                    block = tensor[start + at:start + min(at + TRANSPOSE_ROWS, fit)]
                    target[at:at + block.shape[0]].copy_(block.t().contiguous().t())
            else:
                target.copy_(tensor[start:start + fit])
            self.used += fit * row
            start += fit
            if self.used == BUFFER_BYTES:
                self._hand_over()

    def _take_free(self) -> tuple[memoryview, torch.Tensor]:
        while True:
            if self.error is not None:
                raise self.error
            try:
                return self.free.get(timeout=0.1)
            except queue.Empty:
                if not all(thread.is_alive() for thread in self.threads) and self.error is None:
                    raise RuntimeError("a thread writing the file ended") from None

    def _hand_over(self) -> None:
        self.full.put((self.current, self.used, self.size))
        self.size += self.used
        self.current, self.used = None, 0

    # -- the hasher and writer threads ----------------------------------------------------------------
    def _stage(self, source: queue.Queue, sink: queue.Queue, work: Callable[..., None]) -> None:
        while True:
            item = source.get()
            if item is None:
                if sink is not self.free:
                    sink.put(None)
                return
            if self.error is None:
                try:
                    work(*item)
                except BaseException as e:  # noqa: BLE001 (raised in the calling thread)
                    self.error = e
            sink.put(item if sink is not self.free else item[0])

    def _hash(self, staged: tuple[memoryview, torch.Tensor], used: int, offset: int) -> None:
        self.digest.update(staged[0][:used])

    def _write(self, staged: tuple[memoryview, torch.Tensor], used: int, offset: int) -> None:
        view = staged[0]
        length = used
        if self.direct and used % ALIGN:  # the file's last block: written whole, the file cut after
            length = used + (-used) % ALIGN
            view[used:length] = bytes(length - used)
        done = 0
        while done < length:
            try:
                done += _write_at(self.fd, view[done:length], offset + done)
            except OSError as e:
                if not (self.direct and e.errno == errno.EINVAL):
                    raise
                self._buffered()  # a write O_DIRECT cannot take here: the rest buffered
                length = used

    def _buffered(self) -> None:
        import fcntl

        fcntl.fcntl(self.fd, fcntl.F_SETFL, fcntl.fcntl(self.fd, fcntl.F_GETFL) & ~_O_DIRECT)
        self.direct = False


def _write_at(fd: int, data: memoryview, offset: int) -> int:
    if hasattr(os, "pwrite"):
        return os.pwrite(fd, data, offset)
    os.lseek(fd, offset, os.SEEK_SET)  # (Windows: one thread writes, in order)
    return os.write(fd, data)
