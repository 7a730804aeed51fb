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
#include "jsonstr.h"

struct field {
	const char *name;
	char val[48];
	int is_str;
};

struct reader {
	enum chkwin_format format;
	const struct chkwin_log_view *view;	/* its schema says each type's fields */
	/* CSV: one column per field name any record type of the log uses. */
	char columns[CHKWIN_MAX_TYPES * CHKWIN_MAX_FIELDS][CHKWIN_NAME_MAX + 1];
	size_t ncolumns;
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

static const char *class_name(uint64_t c)
{
	return c < CHKWIN_CLASSES ? chkwin_class_names[c] : "?";
}

/* A little-endian unsigned field of 1, 2, 4 or 8 bytes. */
static uint64_t get_uint(const uint8_t *p, unsigned int size)
{
	uint64_t v = 0;

	while (size--)
		v = v << 8 | p[size];
	return v;
}

/*
 * A record's fields in the order of its layout (the log's schema):
 * decimal integers, except class and record type (their names), strings,
 * and hex fields (strings: JSON numbers cannot hold a 64-bit address
 * exactly).  analysis/logjson.py prints the same, byte for byte.
 */
static int rec_fields(const struct chkwin_schema *s, const struct chkwin_rec *r,
		      struct field *out)
{
	const struct chkwin_rec_layout *t = &s->t[r->h.type];
	int n = 0, i;

	for (i = 0; i < t->nfields; i++) {
		const struct chkwin_field *f = &t->f[i];
		const uint8_t *p = r->raw + f->offset;
		uint64_t v = f->show == CHKWIN_SHOW_STR ? 0 : get_uint(p, f->size);
		unsigned int bits = f->size * 8;
		const char *name;

		if (f->when == CHKWIN_WHEN_METADATA && !(r->h.flags & CHKWIN_F_METADATA))
			continue;
		switch (f->show) {
		case CHKWIN_SHOW_SDEC:
			if (bits < 64 && v >> (bits - 1))
				v |= ~0ULL << bits;
			n = add(out, n, f->name, 0, "%lld", v);
			break;
		case CHKWIN_SHOW_HEX:
			n = add(out, n, f->name, 1, "0x%llx", v);
			break;
		case CHKWIN_SHOW_CLASS:
			n = add_str(out, n, f->name, class_name(v), 16);
			break;
		case CHKWIN_SHOW_TYPE:
			name = v < CHKWIN_MAX_TYPES ? chkwin_schema_name(s, (unsigned int)v) : NULL;
			n = add_str(out, n, f->name, name ? name : "?", 32);
			break;
		case CHKWIN_SHOW_STR:
			n = add_str(out, n, f->name, (const char *)p, f->size);
			break;
		default:
			n = add(out, n, f->name, 0, "%llu", v);
		}
	}
	return n;
}

/* The CSV columns: every field name of the log's types, first use first. */
static void csv_columns(struct reader *rd)
{
	const struct chkwin_schema *s = &rd->view->schema;
	size_t c;
	int n, i;

	for (n = 1; n < CHKWIN_MAX_TYPES; n++)
		for (i = 0; i < s->t[n].nfields; i++) {
			const struct chkwin_field *f = &s->t[n].f[i];

			for (c = 0; c < rd->ncolumns; c++)
				if (!strcmp(rd->columns[c], f->name))
					break;
			if (c == rd->ncolumns && f->show != CHKWIN_SHOW_PAD)
				snprintf(rd->columns[rd->ncolumns++], sizeof(rd->columns[0]), "%s",
					 f->name);
		}
}

static int print_rec(const struct chkwin_rec *r, uint64_t pos, void *ctx)
{
	const struct reader *rd = ctx;
	const struct chkwin_schema *s = &rd->view->schema;
	const char *type = chkwin_schema_name(s, r->h.type);
	struct field f[CHKWIN_MAX_FIELDS];
	int n = rec_fields(s, r, f), i;
	size_t c;

	switch (rd->format) {
	case FORMAT_TEXT:
		printf("%llu.%09llu cpu%u tid %u %-7s flags=0x%02x",
		       (unsigned long long)(r->h.ts / 1000000000ULL),
		       (unsigned long long)(r->h.ts % 1000000000ULL), r->h.cpu, r->h.tid,
		       type, r->h.flags);
		for (i = 0; i < n; i++)
			printf(" %s=%s", f[i].name, f[i].val);
		putchar('\n');
		break;
	case FORMAT_JSON:
		printf("{\"pos\":%llu,\"type\":\"%s\",\"ts\":%llu,\"cpu\":%u,\"tid\":%u,\"flags\":%u",
		       (unsigned long long)pos, type,
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
		       type, (unsigned long long)r->h.ts, r->h.cpu,
		       r->h.tid, r->h.flags);
		for (c = 0; c < rd->ncolumns; c++) {
			putchar(',');
			for (i = 0; i < n; i++)
				if (!strcmp(f[i].name, rd->columns[c]))
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

	/* Parse once for the header (printed first), then print records. */
	ret = chkwin_log_parse(data ? data : (const uint8_t *)"", (size_t)st.st_size, &v, NULL, NULL);
	rd.view = &v;
	if (format == FORMAT_CSV) {
		csv_columns(&rd);
		printf("pos,type,ts,cpu,tid,flags");
		for (c = 0; c < rd.ncolumns; c++)
			printf(",%s", rd.columns[c]);
		putchar('\n');
	}
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
