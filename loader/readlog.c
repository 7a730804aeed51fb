// SPDX-License-Identifier: GPL-2.0
/* The C reader of docs/log-format.md, for looking at a log inside the guest. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "logfile.h"
#include "names.h"
#include "readlog.h"
#include "strbuf.h"

#define MAX_FIELDS 16

struct field {
	const char *name;
	char val[48];
	int is_str;
};

/* CSV has one column per field name any record type uses. */
static const char *const csv_columns[] = {
	"end_ns", "ino", "dev", "stored", "computed", "err", "pc", "sp", "irq",
	"class", "el", "func", "offset", "ipi", "caller", "seed", "length",
	"result", "irqs", "vec", "sector", "nr_sectors", "cmd_flags", "error", "block",
	"call_horizon", "arrival_horizon", "history", "calls", "arrivals", "blocks",
	"evicted", "trigger",
};

#define NCOLS (sizeof(csv_columns) / sizeof(csv_columns[0]))

struct reader {
	enum chkwin_format format;
};

static int add(struct field *f, int n, const char *name, int is_str, const char *fmt,
	       unsigned long long v)
{
	f[n].name = name;
	f[n].is_str = is_str;
	snprintf(f[n].val, sizeof(f[n].val), fmt, v);
	return n + 1;
}

static int add_str(struct field *f, int n, const char *name, const char *s, size_t max)
{
	f[n].name = name;
	f[n].is_str = 1;
	snprintf(f[n].val, sizeof(f[n].val), "%.*s", (int)max, s);
	return n + 1;
}

static const char *class_name(unsigned int c)
{
	return c < CHKWIN_CLASSES ? chkwin_class_names[c] : "?";
}

static const char *rec_name(unsigned int type)
{
	return chkwin_rec_name(type) ? chkwin_rec_name(type) : "?";
}

/*
 * A record's fields in the order of its struct (docs/log-format.md):
 * integers, except class (its name), ipi (a string) and pc and sp (hex
 * strings, which JSON numbers could not hold exactly).  analysis/logjson.py
 * prints the same, byte for byte.
 */
static int rec_fields(const struct chkwin_rec *r, struct field *f)
{
	int n = 0;

	switch (r->h.type) {
	case CHKWIN_REC_CHKSUM:
		n = add(f, n, "end_ns", 0, "%llu", r->chksum.end_ns);
		n = add(f, n, "seed", 0, "%llu", r->chksum.seed);
		n = add(f, n, "length", 0, "%llu", r->chksum.length);
		n = add(f, n, "result", 0, "%llu", r->chksum.result);
		n = add(f, n, "dev", 0, "%llu", r->chksum.dev);
		n = add(f, n, "caller", 0, "%llu", r->chksum.caller);
		n = add(f, n, "irqs", 0, "%llu", r->chksum.irqs);
		break;
	case CHKWIN_REC_VERIFY:
		n = add(f, n, "ino", 0, "%llu", r->verify.ino);
		n = add(f, n, "dev", 0, "%llu", r->verify.dev);
		n = add(f, n, "stored", 0, "%llu", r->verify.stored);
		n = add(f, n, "computed", 0, "%llu", r->verify.computed);
		if (r->h.flags & CHKWIN_F_METADATA) {
			n = add(f, n, "caller", 0, "%llu", r->verify.caller);
			n = add(f, n, "block", 0, "%llu", r->verify.block);
		}
		break;
	case CHKWIN_REC_IGET:
		n = add(f, n, "ino", 0, "%llu", r->iget.ino);
		n = add(f, n, "dev", 0, "%llu", r->iget.dev);
		n = add(f, n, "err", 0, "%lld", (unsigned long long)(long long)r->iget.err);
		break;
	case CHKWIN_REC_IRQ:
		n = add(f, n, "pc", 1, "0x%llx", r->irq.pc);
		n = add(f, n, "sp", 1, "0x%llx", r->irq.sp);
		n = add(f, n, "end_ns", 0, "%llu", r->irq.end_ns);
		n = add(f, n, "irq", 0, "%llu", r->irq.irq);
		n = add(f, n, "offset", 0, "%llu", r->irq.offset);
		n = add_str(f, n, "class", class_name(r->irq.class), 16);
		n = add(f, n, "el", 0, "%llu", r->irq.el);
		n = add(f, n, "func", 0, "%llu", r->irq.func);
		n = add_str(f, n, "ipi", r->irq.ipi, sizeof(r->irq.ipi));
		break;
	case CHKWIN_REC_SOFTIRQ:
		n = add(f, n, "end_ns", 0, "%llu", r->softirq.end_ns);
		n = add(f, n, "vec", 0, "%llu", r->softirq.vec);
		break;
	case CHKWIN_REC_BLOCK:
		n = add(f, n, "sector", 0, "%llu", r->block.sector);
		n = add(f, n, "nr_sectors", 0, "%llu", r->block.nr_sectors);
		n = add(f, n, "dev", 0, "%llu", r->block.dev);
		n = add(f, n, "cmd_flags", 0, "%llu", r->block.cmd_flags);
		n = add(f, n, "error", 0, "%lld", (unsigned long long)(long long)r->block.error);
		break;
	case CHKWIN_REC_SAMPLE:
		n = add(f, n, "pc", 1, "0x%llx", r->sample.pc);
		n = add(f, n, "sp", 1, "0x%llx", r->sample.sp);
		n = add(f, n, "offset", 0, "%llu", r->sample.offset);
		n = add_str(f, n, "class", class_name(r->sample.class), 16);
		n = add(f, n, "el", 0, "%llu", r->sample.el);
		n = add(f, n, "func", 0, "%llu", r->sample.func);
		break;
	case CHKWIN_REC_SNAPSHOT:
		n = add(f, n, "call_horizon", 0, "%llu", r->snapshot.call_horizon);
		n = add(f, n, "arrival_horizon", 0, "%llu", r->snapshot.arrival_horizon);
		n = add(f, n, "history", 0, "%llu", r->snapshot.history);
		n = add(f, n, "calls", 0, "%llu", r->snapshot.calls);
		n = add(f, n, "arrivals", 0, "%llu", r->snapshot.arrivals);
		n = add(f, n, "blocks", 0, "%llu", r->snapshot.blocks);
		n = add(f, n, "evicted", 0, "%llu", r->snapshot.evicted);
		n = add_str(f, n, "trigger", rec_name(r->snapshot.trigger), 16);
		break;
	}
	return n;
}

static int print_rec(const struct chkwin_rec *r, uint64_t pos, void *ctx)
{
	const struct reader *rd = ctx;
	struct field f[MAX_FIELDS];
	int n = rec_fields(r, f), i;
	size_t c;

	switch (rd->format) {
	case FORMAT_TEXT:
		printf("%llu.%09llu cpu%u tid %u %-7s flags=0x%02x",
		       (unsigned long long)(r->h.ts / 1000000000ULL),
		       (unsigned long long)(r->h.ts % 1000000000ULL), r->h.cpu, r->h.tid,
		       chkwin_rec_name(r->h.type), r->h.flags);
		for (i = 0; i < n; i++)
			printf(" %s=%s", f[i].name, f[i].val);
		putchar('\n');
		break;
	case FORMAT_JSON:
		printf("{\"pos\":%llu,\"type\":\"%s\",\"ts\":%llu,\"cpu\":%u,\"tid\":%u,\"flags\":%u",
		       (unsigned long long)pos, chkwin_rec_name(r->h.type),
		       (unsigned long long)r->h.ts, r->h.cpu, r->h.tid, r->h.flags);
		for (i = 0; i < n; i++) {
			printf(",\"%s\":", f[i].name);
			if (f[i].is_str)
				json_str(stdout, f[i].val, sizeof(f[i].val));
			else
				fputs(f[i].val, stdout);
		}
		puts("}");
		break;
	case FORMAT_CSV:
		printf("%llu,%s,%llu,%u,%u,%u", (unsigned long long)pos,
		       chkwin_rec_name(r->h.type), (unsigned long long)r->h.ts, r->h.cpu,
		       r->h.tid, r->h.flags);
		for (c = 0; c < NCOLS; c++) {
			putchar(',');
			for (i = 0; i < n; i++)
				if (!strcmp(f[i].name, csv_columns[c]))
					fputs(f[i].val, stdout);
		}
		putchar('\n');
		break;
	}
	return 0;
}

/* key=value text as "# " lines (text) or one JSON object line. */
static void print_text_block(enum chkwin_format format, const char *what,
			     const char *text, size_t len)
{
	const char *p = text, *end = text + len;
	int first = 1;

	if (format == FORMAT_CSV)
		return;
	if (format == FORMAT_JSON)
		printf("{\"%s\":{", what);
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *line_end = nl ? nl : end;
		const char *eq = memchr(p, '=', (size_t)(line_end - p));

		if (format == FORMAT_TEXT) {
			printf("# %s %.*s\n", what, (int)(line_end - p), p);
		} else if (eq) {
			printf("%s", first ? "" : ",");
			json_str(stdout, p, (size_t)(eq - p));
			putchar(':');
			json_str(stdout, eq + 1, (size_t)(line_end - eq - 1));
			first = 0;
		}
		p = line_end + 1;
	}
	if (format == FORMAT_JSON)
		puts("}}");
}

int chkwin_read_log(const char *path, enum chkwin_format format)
{
	static const char *const status_names[] = { "complete", "truncated", "corrupt" };
	struct reader rd = { .format = format };
	struct chkwin_log_view v;
	const uint8_t *data = NULL;
	struct stat st;
	size_t c;
	int fd, ret;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st)) {
		fprintf(stderr, "chkwin: error: cannot read log %s: %s\n", path, strerror(errno));
		if (fd >= 0)
			close(fd);
		return 1;
	}
	if (st.st_size > 0) {
		data = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
		if (data == MAP_FAILED) {
			fprintf(stderr, "chkwin: error: cannot map log %s: %s\n", path, strerror(errno));
			close(fd);
			return 1;
		}
	}
	close(fd);

	if (format == FORMAT_CSV) {
		printf("pos,type,ts,cpu,tid,flags");
		for (c = 0; c < NCOLS; c++)
			printf(",%s", csv_columns[c]);
		putchar('\n');
	}
	/* Parse once for the header (printed first), then print records. */
	ret = chkwin_log_parse(data ? data : (const uint8_t *)"", (size_t)st.st_size, &v, NULL, NULL);
	if (v.header)
		print_text_block(format, "header", v.header, v.header_len);
	if (ret == 0 || v.header)
		chkwin_log_parse(data, (size_t)st.st_size, &v, print_rec, &rd);
	if (v.trailer)
		print_text_block(format, "trailer", v.trailer, v.trailer_len);
	if (format == FORMAT_JSON) {
		printf("{\"status\":\"%s\",\"records\":%llu,\"offset\":%llu,\"reason\":",
		       status_names[v.status], (unsigned long long)v.records,
		       (unsigned long long)v.offset);
		json_str(stdout, v.reason, sizeof(v.reason));
		puts("}");
	}
	fflush(stdout);
	if (data)
		munmap((void *)data, (size_t)st.st_size);
	if (v.status == CHKWIN_LOG_COMPLETE)
		return 0;
	fprintf(stderr, "chkwin: error: %s: %s\n", path, v.reason);
	return v.status == CHKWIN_LOG_TRUNCATED ? 3 : 1;
}
