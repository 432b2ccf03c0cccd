"""A minimal, valid PDF writer: pages of text lines in Helvetica (for upload tests)."""

from __future__ import annotations


def _escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")


def make_pdf(pages: list[list[str]]) -> bytes:
    """Return a PDF whose pages show the given lines, one text line each."""
    objects: list[bytes] = []
    page_ids = [3 + 2 * i for i in range(len(pages))]
    font_id = 3 + 2 * len(pages)
    objects.append(b"<< /Type /Catalog /Pages 2 0 R >>")
    kids = " ".join(f"{pid} 0 R" for pid in page_ids)
    objects.append(f"<< /Type /Pages /Kids [{kids}] /Count {len(pages)} >>".encode())
    for i, lines in enumerate(pages):
        content_id = page_ids[i] + 1
        objects.append(
            (
                f"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents {content_id} 0 R"
                f" /Resources << /Font << /F1 {font_id} 0 R >> >> >>"
            ).encode()
        )
        ops = ["BT", "/F1 12 Tf", "14 TL", "72 720 Td"]
        for line in lines:
            ops.append(f"({_escape(line)}) Tj T*")
        ops.append("ET")
        stream = "\n".join(ops).encode("latin-1")
        objects.append(b"<< /Length %d >>\nstream\n" % len(stream) + stream + b"\nendstream")
    objects.append(b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>")
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += f"{number} 0 obj\n".encode() + body + b"\nendobj\n"
    xref = len(out)
    out += f"xref\n0 {len(objects) + 1}\n0000000000 65535 f \n".encode()
    for offset in offsets:
        out += f"{offset:010d} 00000 n \n".encode()
    out += (
        f"trailer\n<< /Size {len(objects) + 1} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n"
    ).encode()
    return bytes(out)


def write_big_pdf(path, filler_bytes: int, lines: list[str]) -> int:
    """Write a PDF of one page showing `lines`, carrying `filler_bytes` of random data in an
    object no page uses (as a large embedded file would be), a MiB at a time; its size."""
    import os

    page = make_pdf([lines])
    head, _, _ = page.partition(b"xref\n")
    count = int(page.split(b"/Size ")[1].split(b" ")[0]) - 1  # objects so far
    offsets = [int(line[:10]) for line in page.split(b"xref\n")[1].splitlines()[2 : 2 + count]]
    with open(path, "wb") as out:
        out.write(head)
        filler_at = len(head)
        out.write(f"{count + 1} 0 obj\n<< /Length {filler_bytes} >>\nstream\n".encode())
        left = filler_bytes
        while left:
            piece = os.urandom(min(left, 1 << 20))
            out.write(piece)
            left -= len(piece)
        out.write(b"\nendstream\nendobj\n")
        xref = out.tell()
        out.write(f"xref\n0 {count + 2}\n0000000000 65535 f \n".encode())
        for offset in [*offsets, filler_at]:
            out.write(f"{offset:010d} 00000 n \n".encode())
        out.write(
            f"trailer\n<< /Size {count + 2} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n".encode()
        )
        return out.tell()
