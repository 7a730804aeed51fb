"""A log as JSON lines, byte for byte what `chkwin --read -f json` prints
(loader/readlog.c): the header object, one object per record (head, then
the payload fields in the order of the log's layout, each as its code
says: integers, class and record type by name, strings, hex as strings),
the trailer object, the status.
Strings are escaped byte by byte as the C side does.  The differential
test holds the two to it."""

from analysis.chkwinlog import CLASSES, F_METADATA


def json_str(raw):
    """A JSON string of bytes up to the first NUL: '"' and '\\\\' escaped,
    control and non-ASCII bytes as \\u00XX."""
    out = ['"']
    for c in raw.split(b"\0", 1)[0]:
        if c in (0x22, 0x5C):
            out.append("\\" + chr(c))
        elif c < 0x20 or c >= 0x7F:
            out.append(f"\\u{c:04x}")
        else:
            out.append(chr(c))
    return "".join(out) + '"'


def text_block(what, raw):
    pairs = []
    for line in raw.split(b"\n"):
        key, sep, value = line.partition(b"=")
        if sep:
            pairs.append(f"{json_str(key)}:{json_str(value)}")
    return f'{{"{what}":{{{",".join(pairs)}}}}}'


def _value(field, v, log):
    """A field as the C reader prints it, by its code in the log's layout."""
    show = field[1]
    if show == "type":
        return json_str(log.layout.types.get(int(v), "?").encode())
    if show == "class":
        return json_str(CLASSES[v].encode() if v < len(CLASSES) else b"?")
    if show == "str":
        return json_str(bytes(v))
    if show == "x":
        return f'"0x{int(v):x}"'
    return str(int(v))


def record_lines(log):
    """One JSON line per record, in file order, its fields in the order of
    its layout (those marked meta only with F_METADATA)."""
    pos = log.positions()
    heads = log.heads()
    for i in range(len(log)):
        kind = log.layout.types[int(heads["type"][i])]
        rec = log.records[i].view(log.layout.dtypes[kind])[0]
        parts = [f'"pos":{int(pos[i])}', f'"type":"{kind}"', f'"ts":{int(rec["ts"])}',
                 f'"cpu":{int(rec["cpu"])}', f'"tid":{int(rec["tid"])}',
                 f'"flags":{int(rec["flags"])}']
        for field in log.layout.fields[kind]:
            if field[4] and not rec["flags"] & F_METADATA:
                continue
            parts.append(f'"{field[0]}":{_value(field, rec[field[0]], log)}')
        yield "{" + ",".join(parts) + "}"


def status_line(status, records, offset, reason):
    return (f'{{"status":"{status}","records":{records},"offset":{offset},'
            f'"reason":{json_str(reason.encode()[:159])}}}')


def lines(log):
    """Every line chkwin --read -f json prints for a log that reads."""
    yield text_block("header", log.raw_header)
    yield from record_lines(log)
    if log.raw_trailer is not None:
        yield text_block("trailer", log.raw_trailer)
    yield status_line(log.status, len(log), log.end_offset, log.reason)
