// SPDX-License-Identifier: GPL-2.0
/*
 * The chkwin event log: docs/log-format.md is the specification, this file
 * and analysis/chkwinlog.py follow it.  Writing is append-only, a chunk
 * per write(2), so that whatever reached the disk before a guest was
 * killed is a readable prefix.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "logfile.h"
#include "logtext.h"

#define FILE_HEAD_V1	16
#define FILE_HEAD_LEN	24	/* version 2 on: plus the header CRC and 4 zero bytes */
#define CHUNK_HEAD_LEN	16

_Static_assert(sizeof(struct chkwin_rec) == CHKWIN_REC_SIZE,
	       "records are 64 bytes (docs/log-format.md)");

static void put_u16(uint8_t *p, uint16_t v)
{
	p[0] = v;
	p[1] = v >> 8;
}

static void put_u32(uint8_t *p, uint32_t v)
{
	put_u16(p, v);
	put_u16(p + 2, v >> 16);
}

static uint16_t get_u16(const uint8_t *p)
{
	return p[0] | (uint16_t)p[1] << 8;
}

static uint32_t get_u32(const uint8_t *p)
{
	return get_u16(p) | (uint32_t)get_u16(p + 2) << 16;
}

/* zlib's CRC-32 of data, continuing from prev (0 to start). */
static uint32_t crc(uint32_t prev, const void *data, size_t len)
{
	return (uint32_t)crc32(prev, data, (uInt)len);
}

static size_t pad8(size_t len)
{
	return (len + 7) & ~(size_t)7;
}

static int write_all(struct chkwin_log_writer *w, const void *buf, size_t len)
{
	const uint8_t *p = buf;

	while (len) {
		ssize_t n = write(w->fd, p, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			int err = n < 0 ? errno : EIO;

			fprintf(stderr, "chkwin: error: writing %s: %s\n",
				w->path, strerror(err));
			return -err;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

int chkwin_log_create(struct chkwin_log_writer *w, const char *path)
{
	struct stat st;
	int flags = O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC;

	memset(w, 0, sizeof(*w));
	w->path = path;
	/* Devices (a virtio-serial port) and pipes are streams: open as is. */
	if (stat(path, &st) == 0 && !S_ISREG(st.st_mode))
		flags = O_WRONLY | O_CLOEXEC;
	w->fd = open(path, flags, 0644);
	if (w->fd < 0) {
		int err = errno;

		fprintf(stderr, "chkwin: error: cannot create log %s: %s%s\n", path,
			strerror(err), err == EEXIST ? " (logs are never overwritten)" : "");
		return -err;
	}
	return 0;
}

/*
 * A text block padded with NULs to a multiple of 8 bytes, after head; the
 * CRC at crc_at continues the chain over head[0, crc_from) and the text.
 */
static int write_text_block(struct chkwin_log_writer *w, uint8_t *head,
			    size_t head_len, const char *text, size_t crc_at,
			    size_t crc_from)
{
	size_t len = strlen(text), padded = pad8(len);
	uint8_t *buf = calloc(1, head_len + padded);
	int err;

	if (!buf) {
		fprintf(stderr, "chkwin: error: out of memory writing %s\n", w->path);
		return -ENOMEM;
	}
	memcpy(buf + head_len, text, len);
	w->chain = crc(crc(w->chain, head, crc_from), buf + head_len, padded);
	put_u32(head + crc_at, w->chain);
	memcpy(buf, head, head_len);
	err = write_all(w, buf, head_len + padded);
	free(buf);
	return err;
}

int chkwin_log_header(struct chkwin_log_writer *w, const char *text)
{
	uint8_t head[FILE_HEAD_LEN] = { 0 };

	memcpy(head, CHKWIN_LOG_MAGIC, sizeof(CHKWIN_LOG_MAGIC));
	put_u16(head + 8, CHKWIN_LOG_VERSION);
	put_u16(head + 10, CHKWIN_REC_SIZE);
	put_u32(head + 12, (uint32_t)pad8(strlen(text)));
	return write_text_block(w, head, sizeof(head), text, 16, 16);
}

int chkwin_log_flush(struct chkwin_log_writer *w)
{
	size_t body = (size_t)w->pending * CHKWIN_REC_SIZE;
	uint8_t head[CHUNK_HEAD_LEN];
	int err;

	if (!w->pending)
		return 0;
	memcpy(head, "CHNK", 4);
	put_u32(head + 4, w->pending);
	w->chain = crc(w->chain, w->chunk, body);
	put_u32(head + 8, w->chain);
	put_u32(head + 12, w->seq);
	/* Head and body in one write so a stream never holds half a head. */
	memcpy(w->out, head, sizeof(head));
	memcpy(w->out + sizeof(head), w->chunk, body);
	err = write_all(w, w->out, sizeof(head) + body);
	if (err)
		return err;
	w->seq++;
	w->pending = 0;
	return 0;
}

int chkwin_log_add(struct chkwin_log_writer *w, const struct chkwin_rec *rec)
{
	w->chunk[w->pending++] = *rec;
	return w->pending == CHKWIN_CHUNK_RECS ? chkwin_log_flush(w) : 0;
}

int chkwin_log_trailer(struct chkwin_log_writer *w, const char *text)
{
	uint8_t head[CHUNK_HEAD_LEN] = { 0 };
	int err = chkwin_log_flush(w);

	if (err)
		return err;
	memcpy(head, "TRLR", 4);
	put_u32(head + 4, (uint32_t)pad8(strlen(text)));
	put_u32(head + 12, w->seq);
	return write_text_block(w, head, sizeof(head), text, 8, 0);
}

int chkwin_log_close(struct chkwin_log_writer *w)
{
	int err = 0;

	if (w->fd >= 0 && close(w->fd)) {
		err = -errno;
		fprintf(stderr, "chkwin: error: closing %s: %s\n", w->path, strerror(errno));
	}
	w->fd = -1;
	return err;
}

const char *chkwin_log_value(const char *text, size_t text_len,
			     const char *key, size_t *len)
{
	size_t klen = strlen(key);
	const char *p = text, *end = text + text_len;

	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *line_end = nl ? nl : end;

		if ((size_t)(line_end - p) > klen && !memcmp(p, key, klen) && p[klen] == '=') {
			*len = (size_t)(line_end - p - (ptrdiff_t)klen - 1);
			return p + klen + 1;
		}
		p = line_end + 1;
	}
	return NULL;
}

/* Reading. */

static int fail(struct chkwin_log_view *v, enum chkwin_log_status status,
		uint64_t offset, const char *what)
{
	v->status = status;
	v->offset = offset;
	snprintf(v->reason, sizeof(v->reason), "%s at byte %llu", what,
		 (unsigned long long)offset);
	return status == CHKWIN_LOG_CORRUPT ? -1 : 0;
}

static size_t text_len(const uint8_t *text, size_t padded)
{
	const void *nul = memchr(text, '\0', padded);

	return nul ? (size_t)((const uint8_t *)nul - text) : padded;
}

/* The first record in a chunk that cannot be right, or -1. */
static long bad_record(const struct chkwin_log_view *v, const uint8_t *recs,
		       uint32_t count)
{
	uint32_t i;

	for (i = 0; i < count; i++) {
		const struct chkwin_rec *r = (const void *)(recs + (size_t)i * CHKWIN_REC_SIZE);

		if (!chkwin_schema_name(&v->schema, r->h.type) || (v->cpus && r->h.cpu >= v->cpus))
			return i;
	}
	return -1;
}

static int emit(struct chkwin_log_view *v, const uint8_t *recs, uint32_t count,
		uint64_t base, chkwin_rec_fn fn, void *ctx)
{
	uint32_t i;

	for (i = 0; i < count; i++) {
		struct chkwin_rec rec;

		memcpy(&rec, recs + (size_t)i * CHKWIN_REC_SIZE, sizeof(rec));
		v->records++;
		v->by_type[rec.h.type]++;
		if (fn && fn(&rec, base + (uint64_t)i * CHKWIN_REC_SIZE, ctx))
			return 1;
	}
	return 0;
}

/* A text block's checks (logtext.c); the offset names the bad line. */
static int check_text(struct chkwin_log_view *v, uint64_t base, const char *text,
		      size_t len, int trailer, struct chkwin_text_check *c)
{
	if (!chkwin_text_check(text, len, trailer, c))
		return 0;
	return fail(v, CHKWIN_LOG_CORRUPT, base + c->bad_at, c->why);
}

/* The trailer's records.TYPE against the records read. */
static int check_counts(struct chkwin_log_view *v, uint64_t base,
			const struct chkwin_text_check *c)
{
	char why[100];
	int i;

	for (i = 1; i < CHKWIN_MAX_TYPES; i++) {
		if (!c->has_records[i] || c->records[i] == v->by_type[i])
			continue;
		snprintf(why, sizeof(why), "trailer says %llu %s records, the log has %llu",
			 (unsigned long long)c->records[i],
			 chkwin_schema_name(&v->schema, (unsigned int)i),
			 (unsigned long long)v->by_type[i]);
		return fail(v, CHKWIN_LOG_CORRUPT, base + c->records_line[i], why);
	}
	return 0;
}

/*
 * The file header and the header text: 0 with *off at the first chunk and
 * *chain the CRC the first chunk chains to (version 2 on), or -1.
 */
static int parse_head(const uint8_t *data, size_t size, struct chkwin_log_view *v,
		      struct chkwin_text_check *check, uint64_t *off, uint32_t *chain)
{
	uint64_t head_len;
	uint32_t hlen;
	char why[48];

	if (size == 0)
		return fail(v, CHKWIN_LOG_CORRUPT, 0, "empty file, not a chkwin log");
	if (size < sizeof(CHKWIN_LOG_MAGIC) ||
	    memcmp(data, CHKWIN_LOG_MAGIC, sizeof(CHKWIN_LOG_MAGIC)))
		return fail(v, CHKWIN_LOG_CORRUPT, 0, "not a chkwin log (no magic)");
	if (size < FILE_HEAD_V1)
		return fail(v, CHKWIN_LOG_CORRUPT, size, "file ends inside the file header");
	v->version = get_u16(data + 8);
	if (v->version < 1 || v->version > CHKWIN_LOG_VERSION) {
		snprintf(why, sizeof(why), "unsupported log version %u", v->version);
		return fail(v, CHKWIN_LOG_CORRUPT, 8, why);
	}
	head_len = v->version == 1 ? FILE_HEAD_V1 : FILE_HEAD_LEN;
	if (size < head_len)
		return fail(v, CHKWIN_LOG_CORRUPT, size, "file ends inside the file header");
	if (get_u16(data + 10) != CHKWIN_REC_SIZE) {
		snprintf(why, sizeof(why), "unexpected record size %u", get_u16(data + 10));
		return fail(v, CHKWIN_LOG_CORRUPT, 10, why);
	}
	hlen = get_u32(data + 12);
	if (hlen % 8)
		return fail(v, CHKWIN_LOG_CORRUPT, 12, "header length not a multiple of 8");
	if (head_len + (uint64_t)hlen > size)
		return fail(v, CHKWIN_LOG_CORRUPT, size, "file ends inside the header text");
	*chain = 0;
	if (v->version > 1) {
		*chain = crc(crc(0, data, 16), data + head_len, hlen);
		if (get_u32(data + 16) != *chain)
			return fail(v, CHKWIN_LOG_CORRUPT, 16, "header CRC mismatch");
		if (get_u32(data + 20))
			return fail(v, CHKWIN_LOG_CORRUPT, 20, "reserved file header bytes not zero");
	}
	v->header = (const char *)data + head_len;
	v->header_len = text_len(data + head_len, hlen);
	if (check_text(v, head_len, v->header, v->header_len, 0, check))
		return -1;
	/* Version 4 on, the header says the record layout; before, it was fixed. */
	if (check->has_schema != (v->version >= 4)) {
		snprintf(why, sizeof(why), check->has_schema ? "record.N lines in a version %u log"
			 : "no record.N lines in a version %u log", v->version);
		return fail(v, CHKWIN_LOG_CORRUPT, head_len, why);
	}
	if (!check->has_schema)
		chkwin_schema_legacy(&check->schema, v->version);
	v->schema = check->schema;
	v->cpus = check->cpus;
	*off = head_len + hlen;
	return 0;
}

/* The TRLR chunk whose head is at off, which must end the file: 0, or -1. */
static int parse_trailer(const uint8_t *data, size_t size, uint64_t off, uint32_t chain,
			 struct chkwin_log_view *v, struct chkwin_text_check *check)
{
	uint32_t count = get_u32(data + off + 4), sum = get_u32(data + off + 8);
	uint64_t body_off = off + CHUNK_HEAD_LEN;

	if (count % 8)
		return fail(v, CHKWIN_LOG_CORRUPT, off + 4, "bad trailer length");
	if (body_off + count > size)
		return fail(v, CHKWIN_LOG_TRUNCATED, size, "log truncated inside the trailer");
	if (crc(v->version > 1 ? chain : 0, data + body_off, count) != sum)
		return fail(v, CHKWIN_LOG_CORRUPT, off, "trailer CRC mismatch");
	if (body_off + count != size)
		return fail(v, CHKWIN_LOG_CORRUPT, body_off + count, "bytes after the trailer");
	v->trailer = (const char *)data + body_off;
	v->trailer_len = text_len(data + body_off, count);
	if (check_text(v, body_off, v->trailer, v->trailer_len, 1, check) ||
	    check_counts(v, body_off, check))
		return -1;
	v->status = CHKWIN_LOG_COMPLETE;
	v->offset = size;
	snprintf(v->reason, sizeof(v->reason), "complete");
	return 0;
}

/*
 * The CHNK chunk whose head is at *off, its records given to fn: 1 with
 * *off and *chain past it; 0 where parsing ends, fn having asked to stop
 * or the chunk cut short (its whole records given first; v says which);
 * -1 on a damaged chunk.
 */
static int parse_chunk(const uint8_t *data, size_t size, uint64_t *off, uint32_t *chain,
		       struct chkwin_log_view *v, chkwin_rec_fn fn, void *ctx)
{
	const uint8_t *head = data + *off;
	uint32_t count = get_u32(head + 4), sum = get_u32(head + 8), want;
	uint64_t body_off = *off + CHUNK_HEAD_LEN, avail;
	long bad;

	if (memcmp(head, "CHNK", 4) || count == 0 || count > (1u << 24))
		return fail(v, CHKWIN_LOG_CORRUPT, *off, "bad chunk head");
	avail = (size - body_off) / CHKWIN_REC_SIZE;
	if (avail < count) {
		/* Cut short: whole records stand, unverified. */
		if (bad_record(v, data + body_off, (uint32_t)avail) >= 0)
			return fail(v, CHKWIN_LOG_CORRUPT, *off, "bad record in the last chunk");
		if (emit(v, data + body_off, (uint32_t)avail, body_off, fn, ctx))
			return 0;
		return fail(v, CHKWIN_LOG_TRUNCATED, size, "log truncated inside a chunk");
	}
	bad = bad_record(v, data + body_off, count);
	if (bad >= 0)
		return fail(v, CHKWIN_LOG_CORRUPT, body_off + (uint64_t)bad * CHKWIN_REC_SIZE,
			    "bad record");
	/* Version 2 chains the CRCs: a chunk moved, dropped or repeated fails. */
	want = crc(v->version > 1 ? *chain : 0, data + body_off,
		   (size_t)count * CHKWIN_REC_SIZE);
	if (want != sum)
		return fail(v, CHKWIN_LOG_CORRUPT, *off, "chunk CRC mismatch");
	*chain = want;
	if (emit(v, data + body_off, count, body_off, fn, ctx))
		return 0;
	*off = body_off + (uint64_t)count * CHKWIN_REC_SIZE;
	return 1;
}

int chkwin_log_parse(const uint8_t *data, size_t size,
		     struct chkwin_log_view *v, chkwin_rec_fn fn, void *ctx)
{
	struct chkwin_text_check check = { 0 };
	uint32_t seq = 0, chain;
	uint64_t off;
	int more;

	memset(v, 0, sizeof(*v));
	if (parse_head(data, size, v, &check, &off, &chain))
		return -1;
	while (off < size) {
		if (size - off < CHUNK_HEAD_LEN)
			return fail(v, CHKWIN_LOG_TRUNCATED, size, "log truncated inside a chunk head");
		if (get_u32(data + off + 12) != seq)
			return fail(v, CHKWIN_LOG_CORRUPT, off + 12, "chunk out of sequence");
		if (!memcmp(data + off, "TRLR", 4))
			return parse_trailer(data, size, off, chain, v, &check);
		more = parse_chunk(data, size, &off, &chain, v, fn, ctx);
		if (more <= 0)
			return more;
		seq++;
	}
	return fail(v, CHKWIN_LOG_TRUNCATED, size, "log truncated: no trailer");
}
