"""A model file's text, gzip-compressed or not, read and written as pipeweave keeps them: written
compressed where the name ends .gz (or where the file read was), without a name or time in gzip's
header, so that the same model gives the same bytes (data/models/*.json.gz)."""
import gzip


def read_text(path):
    """The file's JSON text, and whether it was gzip-compressed."""
    with open(path, "rb") as f:
        data = f.read()
    compressed = data[:2] == b"\x1f\x8b"
    return (gzip.decompress(data) if compressed else data).decode(), compressed


def write_text(path, text, compressed):
    with open(path, "wb") as f:
        f.write(gzip.compress(text.encode(), compresslevel=9, mtime=0) if compressed else text.encode())
