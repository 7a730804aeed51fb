// SPDX-License-Identifier: GPL-2.0
/*
 * Round trip of the log encoder and decoder (loader/logfile.c), then the
 * damage cases docs/log-format.md names: every cut point of a log reads
 * as truncated with all whole records kept, and flipped bytes in each
 * part are reported as corrupt at the right offset.  Prints one line per
 * failed check and exits 1 if any failed.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "logfile.h"
#include "schema.h"
#include "strbuf.h"

#define NRECS (CHKWIN_CHUNK_RECS + 100)	/* two chunks, the second partial */

static int failures;

#define CHECK(cond, ...) do {						\
	if (!(cond)) {							\
		failures++;						\
		printf("FAIL %s:%d: ", __FILE__, __LINE__);		\
		printf(__VA_ARGS__);					\
		putchar('\n');						\
	}								\
} while (0)

struct seen {
	uint64_t n;
	uint64_t last_ts;
	int in_order;
};

static int count_rec(const struct chkwin_rec *r, uint64_t offset, void *ctx)
{
	struct seen *s = ctx;

	(void)offset;
	if (r->h.ts != s->n + 1000)
		s->in_order = 0;
	s->n++;
	return 0;
}

static void make_rec(struct chkwin_rec *r, unsigned int i)
{
	memset(r, 0, sizeof(*r));
	r->h.type = 1 + i % (CHKWIN_REC_TYPES - 1);
	r->h.cpu = i % 2;
	r->h.tid = 100 + i;
	r->h.ts = 1000 + i;
	r->irq.pc = 0xffffffc008000000ULL + i;
}

static uint8_t *write_log(size_t *size, uint64_t *head_end, uint64_t *chunk2_off)
{
	char path[] = "/tmp/chkwin-logtest-XXXXXX";
	struct chkwin_log_writer *w = malloc(sizeof(*w));
	struct text header = { 0 };
	struct chkwin_rec r;
	uint8_t *data;
	FILE *f;
	int fd = mkstemp(path);
	unsigned int i;
	long len;

	CHECK(fd >= 0 && w, "mkstemp/malloc");
	close(fd);
	unlink(path);
	CHECK(chkwin_log_create(w, path) == 0, "create");
	CHECK(chkwin_log_create(w, path) != 0, "an existing log must not be overwritten");
	CHECK(chkwin_log_create(w, path) != 0, "still refused");
	unlink(path);
	CHECK(chkwin_log_create(w, path) == 0, "create again");
	/* A version 4 header says its record layout. */
	text_add(&header, "cpus=2\ntool=test\n");
	chkwin_schema_text(&header);
	CHECK(!header.failed && chkwin_log_header(w, header.buf) == 0, "header");
	text_free(&header);
	for (i = 0; i < NRECS; i++) {
		make_rec(&r, i);
		CHECK(chkwin_log_add(w, &r) == 0, "add %u", i);
	}
	CHECK(chkwin_log_trailer(w, "ending=duration\n") == 0, "trailer");
	CHECK(chkwin_log_close(w) == 0, "close");
	f = fopen(path, "rb");
	fseek(f, 0, SEEK_END);
	len = ftell(f);
	rewind(f);
	data = malloc((size_t)len);
	CHECK(fread(data, 1, (size_t)len, f) == (size_t)len, "read back");
	fclose(f);
	unlink(path);
	free(w);
	*size = (size_t)len;
	/* file head 24 + header text (its length at byte 12) + chunk head 16 */
	*head_end = 24 + ((uint64_t)data[12] | (uint64_t)data[13] << 8 |
			  (uint64_t)data[14] << 16 | (uint64_t)data[15] << 24);
	*chunk2_off = *head_end + 16 + (uint64_t)CHKWIN_CHUNK_RECS * CHKWIN_REC_SIZE;
	return data;
}

int main(void)
{
	struct chkwin_log_view v;
	struct seen s = { 0, 0, 1 };
	uint64_t chunk2, head_end;
	size_t size, cut, len;
	uint8_t *data = write_log(&size, &head_end, &chunk2), *copy;
	uint64_t first_rec = head_end + 16;
	const char *val;

	CHECK(chkwin_log_parse(data, size, &v, count_rec, &s) == 0, "parse: %s", v.reason);
	CHECK(v.status == CHKWIN_LOG_COMPLETE, "complete: %s", v.reason);
	CHECK(s.n == NRECS && v.records == NRECS, "records %llu", (unsigned long long)s.n);
	CHECK(s.in_order, "records in order");
	CHECK(v.cpus == 2, "cpus from header");
	val = chkwin_log_value(v.trailer, v.trailer_len, "ending", &len);
	CHECK(val && len == 8 && !memcmp(val, "duration", 8), "trailer value");
	val = chkwin_log_value(v.header, v.header_len, "tool", &len);
	CHECK(val && len == 4 && !memcmp(val, "test", 4), "header value");

	/* Every cut: truncated (or corrupt only inside the file header). */
	for (cut = 0; cut < size; cut++) {
		uint64_t whole;
		int ret = chkwin_log_parse(data, cut, &v, NULL, NULL);

		if (cut < head_end) {
			CHECK(ret == -1, "cut %zu inside the header must be rejected", cut);
			continue;
		}
		whole = cut < first_rec ? 0 :
			cut < chunk2 ? (cut - first_rec) / CHKWIN_REC_SIZE :
			cut < chunk2 + 16 ? CHKWIN_CHUNK_RECS :
			CHKWIN_CHUNK_RECS + (cut - chunk2 - 16) / CHKWIN_REC_SIZE;
		if (whole > NRECS)
			whole = NRECS;
		CHECK(ret == 0 && v.status == CHKWIN_LOG_TRUNCATED,
		      "cut %zu: status %d (%s)", cut, v.status, v.reason);
		CHECK(v.records == whole, "cut %zu: %llu records, want %llu", cut,
		      (unsigned long long)v.records, (unsigned long long)whole);
		CHECK(v.offset == cut, "cut %zu: offset %llu", cut, (unsigned long long)v.offset);
	}

	copy = malloc(size);
	/* A flipped byte in a record's payload: the chunk's CRC catches it. */
	memcpy(copy, data, size);
	copy[first_rec + 5 * CHKWIN_REC_SIZE + 20] ^= 0x40;
	CHECK(chkwin_log_parse(copy, size, &v, NULL, NULL) == -1 &&
	      v.status == CHKWIN_LOG_CORRUPT && v.offset == first_rec - 16,
	      "payload flip: %s", v.reason);
	/* A bad record type is singled out. */
	memcpy(copy, data, size);
	copy[chunk2 + 16 + 3 * CHKWIN_REC_SIZE] = 0xee;
	CHECK(chkwin_log_parse(copy, size, &v, NULL, NULL) == -1 &&
	      v.offset == chunk2 + 16 + 3 * CHKWIN_REC_SIZE, "bad type: %s", v.reason);
	/* A CPU beyond the header's count. */
	memcpy(copy, data, size);
	copy[first_rec + 2] = 7;
	CHECK(chkwin_log_parse(copy, size, &v, NULL, NULL) == -1 &&
	      v.offset == first_rec, "bad cpu: %s", v.reason);
	/* Damaged magic, chunk head, trailer, and bytes after the trailer. */
	memcpy(copy, data, size);
	copy[0] = 'X';
	CHECK(chkwin_log_parse(copy, size, &v, NULL, NULL) == -1 && v.offset == 0, "magic");
	memcpy(copy, data, size);
	copy[chunk2 + 1] = 'x';
	CHECK(chkwin_log_parse(copy, size, &v, NULL, NULL) == -1 && v.offset == chunk2,
	      "chunk head: %s", v.reason);
	memcpy(copy, data, size);
	copy[size - 3] ^= 1;
	CHECK(chkwin_log_parse(copy, size, &v, NULL, NULL) == -1 &&
	      v.status == CHKWIN_LOG_CORRUPT, "trailer text: %s", v.reason);
	/* A header byte changed: version 2's header CRC. */
	memcpy(copy, data, size);
	copy[24 + 2] ^= 1;
	CHECK(chkwin_log_parse(copy, size, &v, NULL, NULL) == -1 && v.offset == 16,
	      "header flip: %s", v.reason);
	/*
	 * The first chunk dropped, the sequence numbers fixed up: the chained
	 * CRCs do not follow on from the header.
	 */
	len = size - (chunk2 - (first_rec - 16));
	memcpy(copy, data, first_rec - 16);
	memcpy(copy + first_rec - 16, data + chunk2, size - chunk2);
	copy[first_rec - 16 + 12] = 0;
	copy[len - 32 + 12] -= 1;	/* the trailer: 16-byte head, 16 bytes of text */
	CHECK(chkwin_log_parse(copy, len, &v, NULL, NULL) == -1 &&
	      v.offset == first_rec - 16, "dropped chunk: %s", v.reason);
	copy = realloc(copy, size + 8);
	memcpy(copy, data, size);
	memset(copy + size, 0, 8);
	CHECK(chkwin_log_parse(copy, size + 8, &v, NULL, NULL) == -1 && v.offset == size,
	      "after trailer: %s", v.reason);

	free(copy);
	free(data);
	if (failures)
		printf("%d checks failed\n", failures);
	else
		printf("logfile_test: all checks passed\n");
	return failures ? 1 : 0;
}
