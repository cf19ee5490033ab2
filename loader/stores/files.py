"""Graph files: read whole, from regular files only, and written beside their paths, then
renamed over them, so a failed write never leaves a truncated file where the path was, nor
destroys the file that was there.

The memory store writes its graph this way (node-link JSON, a snapshot), one file or several
together (``load --save --snapshot``: both written, then both renamed into place), and so does
the GraphML writer, a piece at a time. A file named ``*.gz`` (any case) is written
gzip-compressed, and a gzip-compressed graph file is read inflated. Only a regular file is
replaced: a FIFO or a device at the path is refused, whoever calls.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import stat
import zlib
from collections.abc import Callable, Generator, Iterable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

import networkx as nx
import orjson

from pith_graph.errors import StoreError, StoreErrorCode, UsageError
from pith_graph.loader.gunzip import READ_BYTES, READ_ERRORS, inflated
from pith_graph.loader.sources import GZIP_MAGIC, not_text_advice, open_regular

__all__ = [
    "Chunks",
    "json_bytes",
    "listed_json",
    "node_link_bytes",
    "node_link_chunks",
    "partial_prefix",
    "read_graph_blocks",
    "read_graph_file",
    "read_node_link",
    "through_links",
    "write_beside",
    "writes_beside",
]

#: Numbers the files being written, so that no two writes share one, even from two threads.
_SERIAL = itertools.count()


#: Bytes of a file's name its temporary file keeps: with the dot before and the number after,
#: the temporary name stays under the 255 bytes a name may have where the file's own fits.
_PARTIAL_NAME_BYTES = 200

#: The most a gzipped graph file may inflate to, per byte of it, plus :data:`_INFLATED_SLACK`:
#: a saved graph's JSON compresses 5–7 times; a file made to inflate a thousand times (a gzip
#: of zeros) is refused before it fills the memory.
_MOST_INFLATED_PER_BYTE = 100
_INFLATED_SLACK = 1 << 20
#: The gzip level a graph file named ``*.gz`` is written at, gzip(1)'s default: node-link
#: JSON of 30k papers (110 MB) became 17 MB in 2.4 s (level 1: 21 MB in 1.1 s).
_GZIP_LEVEL = 6


def partial_prefix(name: str) -> str:
    """How the name of a file written beside the file ``name`` begins: ``.name.``, the name
    cut to its first :data:`_PARTIAL_NAME_BYTES` bytes (a valid name of 250 bytes was refused,
    "File name too long": its temporary name was longer).

    >>> partial_prefix("g.json"), len(partial_prefix("x" * 255))
    ('.g.json.', 202)
    """
    return f".{os.fsdecode(os.fsencode(name)[:_PARTIAL_NAME_BYTES])}."


def json_bytes(value: object) -> bytes:
    """``value`` as JSON, for a graph file; ``write_failed`` if it cannot be. orjson writes
    254 levels of nesting and reads 1,024, so an attribute added to a node-link file by hand
    could open and then fail every save (``prune --graph``: exit 70, a traceback)."""
    try:
        return orjson.dumps(value, option=orjson.OPT_SERIALIZE_NUMPY)  # (numpy's numbers: as JSON's)
    except orjson.JSONEncodeError as err:
        deep = " (an attribute nested more than 254 levels deep)" if "Recursion limit" in str(err) else ""
        raise StoreError(
            StoreErrorCode.WRITE_FAILED, f"the graph cannot be written as JSON: {err}{deep}"
        ) from err


def node_link_bytes(graph: nx.DiGraph) -> bytes:
    """``graph`` as networkx node-link JSON (its edges under ``"edges"``): ``--save``'s file,
    whole (:func:`node_link_chunks` joined)."""
    return b"".join(node_link_chunks(graph))


#: Bytes of node-link JSON written per piece: each piece encodes as many nodes (or edges) as
#: the last one's size says make about this many, never more than :data:`_MOST_PER_PIECE`.
_PIECE_BYTES = 1 << 14
_MOST_PER_PIECE = 1024


def node_link_chunks(graph: nx.DiGraph) -> Iterator[bytes]:
    """``graph`` as networkx node-link JSON, in pieces (about :data:`_PIECE_BYTES` each) which
    joined are, byte for byte, ``json_bytes(nx.node_link_data(graph, edges="edges"))``: the
    same dicts (``{**data, "id": node}``, ``{**data, "source": u, "target": v}``), made and
    encoded a few nodes or edges at a time, so neither the document's dicts nor its bytes are
    ever whole in memory (14k papers: +124 MB over the graph, now +2–3 MB; bench_save.py). Each value is
    encoded as deep in a list as it lies in the document, so one nested too deep fails as it
    did, ``write_failed`` from :func:`json_bytes`, with the same message: mid-file, then (a
    :func:`write_beside` of the pieces leaves no file)."""
    multigraph = graph.is_multigraph()
    directed = b"true" if graph.is_directed() else b"false"
    yield b'{"directed":%s,"multigraph":%s,"graph":%s,"nodes":[' % (
        directed,
        b"true" if multigraph else b"false",
        json_bytes([graph.graph])[1:-1],  # (in the document, at the depth of a list's item)
    )
    yield from listed_json({**data, "id": node} for node, data in graph.nodes(data=True))
    yield b'],"edges":['
    if multigraph:
        yield from listed_json(
            {**data, "source": u, "target": v, "key": key}
            for u, v, key, data in graph.edges(keys=True, data=True)
        )
    else:
        yield from listed_json({**data, "source": u, "target": v} for u, v, data in graph.edges(data=True))
    yield b"]}"


def listed_json(items: Iterator[Any]) -> Iterator[bytes]:
    """The items of a list of the document (``"nodes":[``...``]``; a snapshot's rows), encoded a few at a time
    (16, then as many as the last piece's size says make :data:`_PIECE_BYTES`), a comma between."""
    count, first = 16, True
    while batch := list(itertools.islice(items, count)):
        if not first:
            yield b","  # (a piece of its own: joined to the next, it would be copied again)
        try:
            piece = json_bytes([batch])[2:-2]  # [[item, ...]]: each item as deep as in the document
        except StoreError as err:
            raise StoreError(err.code, f"{err.args[0]}{_unwritable(batch)}") from err.__cause__
        del batch
        yield piece
        first = False
        count = max(1, min(_MOST_PER_PIECE, count * _PIECE_BYTES // max(len(piece), 1)))


def _unwritable(batch: list[Any]) -> str:
    """Where in ``batch`` (node-link dicts) the first value JSON cannot hold lies: ``" (node
    'x', attribute 'score')"``; ``""`` where the items are not dicts (a snapshot's rows)."""
    for item in batch:
        for name, value in item.items() if isinstance(item, dict) else ():
            try:
                json_bytes([[{name: value}]])  # (as deep as it lies there)
            except StoreError:
                where = (
                    f"node {item['id']!r}"
                    if "id" in item
                    else f"edge {item.get('source')!r} -> {item.get('target')!r}"
                )
                return f" ({where}, attribute {name!r})"
    return ""


def read_graph_file(path: str | Path, size: int = -1) -> bytes | bytearray:
    """The bytes of the graph file at ``path`` (its first ``size`` bytes, if given), inflated
    if it is gzip-compressed; :class:`OSError` if it is not a regular file (a FIFO would
    block, a device may never end; checked on the open file), :class:`UsageError` if it is a
    broken gzip file or one that inflates more than a graph's JSON could."""
    with open_regular(str(path), advice="") as file:
        if file.read(len(GZIP_MAGIC)) != GZIP_MAGIC:
            file.seek(0)
            return file.read(size)
        file.seek(0)
        most = _MOST_INFLATED_PER_BYTE * os.fstat(file.fileno()).st_size + _INFLATED_SLACK
        wanted = most + 1 if size < 0 else min(size, most + 1)
        data = bytearray()  # grown in place: a join of the pieces would need twice the memory
        try:
            reader = inflated(file)
            while len(data) < wanted and (piece := reader.read(min(READ_BYTES, wanted - len(data)))):
                data += piece
        except READ_ERRORS as err:
            raise UsageError(f"cannot open saved graph {path}: a broken gzip file ({err})") from err
        if len(data) > most:
            raise UsageError(
                f"cannot open saved graph {path}: it inflates more than {_MOST_INFLATED_PER_BYTE} times "
                "its size, which no graph's JSON does"
            )
        return data


def read_graph_blocks(path: str | Path) -> Generator[bytes]:
    """The bytes of the graph file at ``path`` a block at a time (``READ_BYTES``), as
    :func:`read_graph_file` reads them whole (inflated, with its checks), never all held."""
    with open_regular(str(path), advice="") as file:
        gzipped = file.read(len(GZIP_MAGIC)) == GZIP_MAGIC
        file.seek(0)
        if not gzipped:
            while block := file.read(READ_BYTES):
                yield block
            return
        most, size = _MOST_INFLATED_PER_BYTE * os.fstat(file.fileno()).st_size + _INFLATED_SLACK, 0
        try:
            reader = inflated(file)
            while block := reader.read(READ_BYTES):
                size += len(block)
                if size > most:
                    raise UsageError(
                        f"cannot open saved graph {path}: it inflates more than {_MOST_INFLATED_PER_BYTE} "
                        "times its size, which no graph's JSON does"
                    )
                yield block
        except READ_ERRORS as err:
            raise UsageError(f"cannot open saved graph {path}: a broken gzip file ({err})") from err


#: What opening a GraphML file as a saved graph says (since 0.9.5: ``--save FILE.graphml``).
_GRAPHML = "GraphML, which pith-graph writes for Gephi and Cytoscape and does not read back: open the node-link JSON or snapshot"


def read_node_link(path: str | Path) -> object:
    """The JSON of the node-link file at ``path`` (:func:`read_graph_file`); a file that is
    not JSON text at all (gzip-compressed, not UTF-8, GraphML) is a :class:`UsageError` saying so
    (orjson said "str is not valid UTF-8: surrogates not allowed")."""
    raw = read_graph_file(path)
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError:
        advice = _GRAPHML if raw[:100].lstrip().startswith((b"<?xml", b"<graphml")) else not_text_advice(raw)
        if advice is None:
            raise
        raise UsageError(f"cannot open saved graph {path}: {advice}") from None


#: The data of a file written beside its path: bytes, or pieces written one after the other (an
#: iterator is consumed as it is written, so the whole file is never in memory at once).
Chunks = bytes | Iterable[bytes]


def write_beside(path: str | Path, data: Chunks) -> None:
    """Write ``data`` beside ``path`` first, then rename it over ``path``: a failed write
    leaves neither a partial file nor a damaged one where ``path`` was.

    Raises :class:`~pith_graph.errors.StoreError` (``write_failed``) naming ``path`` when the
    file cannot be written or renamed (a full disk, a folder in the way), or when ``path`` is
    not a regular file (a FIFO, a device: renamed over, ``/dev/null`` would become a file).
    """
    with writes_beside() as write:
        write(path, data)


@contextmanager
def writes_beside() -> Iterator[Callable[[str | Path, Chunks], None]]:
    """Files written together: each ``write(path, data)`` (bytes, or pieces written one after
    the other, :data:`Chunks`) goes to a file beside ``path``
    (flushed to disk), and only when the block ends without an error are they all renamed
    over their paths, in order. A failure before that (a full disk, an error in the block or
    in the pieces' iterator) removes what was written and leaves every path as it was; a
    rename that fails (a folder put in the way) removes the files not renamed yet, and its
    error names the paths already replaced. A path that is there and is not a regular file
    is refused before anything is written, and again before the rename. Raises
    :class:`~pith_graph.errors.StoreError` (``write_failed``) naming the path."""
    staged: list[tuple[Path, Path, Path]] = []  # (the path given, the file written, its partial)

    def write(path: str | Path, data: Chunks) -> None:
        given = target = Path(path)
        pieces: Iterable[bytes] = [data] if isinstance(data, bytes) else data
        if given.name.lower().endswith(".gz"):
            pieces = _gzipped(pieces)
        try:
            target = through_links(given)
            _refuse_irregular(target)
            partial = target.with_name(f"{partial_prefix(target.name)}{os.getpid()}.{next(_SERIAL)}.tmp")
            staged.append((given, target, partial))
            # never another write's file; only its owner reads it until it is renamed
            with open(os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), "wb") as file:
                for piece in pieces:
                    file.write(piece)
                file.flush()
                os.fsync(file.fileno())  # the data is on disk before the rename shows it
        except OSError as error:
            raise _write_failed(given, target, error) from error

    try:
        yield write
    except BaseException:
        for _given, _target, partial in staged:
            with suppress(OSError):  # its folder replaced by a file: NotADirectoryError
                partial.unlink()
        raise
    for done, (given, target, partial) in enumerate(staged):
        try:
            _refuse_irregular(target)
            os.chmod(partial, _mode_for(target))
            os.replace(partial, target)
        except OSError as error:
            for _, _, left in staged[done:]:
                with suppress(OSError):
                    left.unlink()
            raise _write_failed(given, target, error, [path for path, _, _ in staged[:done]]) from error
    _sync_folders({target.parent for _, target, _ in staged})


def _refuse_irregular(target: Path) -> None:
    """:class:`OSError` if ``target`` is there and is neither a regular file nor a folder (a
    FIFO, a device, a socket): a rename would replace it by a file (``root`` could replace
    ``/dev/null``). A folder fails the rename itself, as it did."""
    try:
        mode = os.stat(target).st_mode
    except FileNotFoundError:
        return
    if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
        raise OSError("not a regular file (a device, FIFO or socket)")


def _gzipped(pieces: Iterable[bytes]) -> Iterator[bytes]:
    """``pieces`` compressed as one gzip member (no name, no time: the same graph makes the
    same file), a piece at a time as they come, so no joined copy of them is made."""
    deflate = zlib.compressobj(_GZIP_LEVEL, zlib.DEFLATED, 31)
    for piece in pieces:
        if packed := deflate.compress(piece):
            yield packed
    yield deflate.flush()


def through_links(path: Path) -> Path:
    """The file a symbolic link ``path`` leads to (replaced in its place, the link kept), or ``path``."""
    return Path(os.path.realpath(path)) if path.is_symlink() else path


def _mode_for(target: Path) -> int:
    """The permissions of the file ``target`` (a save keeps them: a ``chmod 600`` graph was
    replaced by a ``644`` one), or a new file's under the umask if there is none."""
    try:
        return os.stat(target).st_mode & 0o777
    except OSError:
        return 0o666 & ~_umask()


def _umask() -> int:
    """This process's umask: from ``/proc`` (Linux), where reading it changes nothing; else
    read by setting it, which gives another thread's file made in between the stricter 077."""
    with (
        contextlib.suppress(OSError, ValueError, StopIteration),
        open("/proc/self/status", encoding="ascii", errors="replace") as status,
    ):
        return int(next(line for line in status if line.startswith("Umask:")).split()[1], 8)
    mask = os.umask(0o077)
    os.umask(mask)
    return mask


def _write_failed(
    given: Path, target: Path, error: OSError, replaced: list[Path] | None = None
) -> StoreError:
    """``write_failed``, naming the path the user gave (and the file a link of theirs leads to)."""
    where = f"{given} (a link to {target})" if target != given else str(given)
    also = f" ({', '.join(map(str, replaced))} already replaced)" if replaced else ""
    return StoreError(
        StoreErrorCode.WRITE_FAILED, f"cannot write the graph to {where}: {error.strerror or error}{also}"
    )


def _sync_folders(folders: set[Path]) -> None:
    """Flush the renames to disk (best effort: not every system opens a folder)."""
    for folder in folders:
        try:
            handle = os.open(folder, os.O_RDONLY)
        except OSError:
            continue
        try:
            os.fsync(handle)
        except OSError:
            pass
        finally:
            os.close(handle)
