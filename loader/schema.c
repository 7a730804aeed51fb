// SPDX-License-Identifier: GPL-2.0
/*
 * Record layouts as text and back: the record table of bpf/chkwin.h
 * written as the header's record.N lines, and any log's lines parsed into
 * the offsets, sizes and print rules a reader needs.  A line is
 *
 *	record.N=TYPE FIELD FIELD...	FIELD: name:CODE@OFFSET[?meta]
 *
 * CODE is u, s or x (unsigned, signed, hex), class or type (a name from
 * a table) followed by the width in bits (8, 16, 32, 64), or str followed
 * by the width in bytes; ?meta marks a field present only with
 * CHKWIN_F_METADATA.
 */
#include <stdio.h>
#include <string.h>

#include "schema.h"

/* This build's table, from bpf/chkwin.h. */
#define FIELD(rec, ctype, fname, dims, show, when)			\
	{ #fname, offsetof(struct chkwin_##rec, fname),			\
	  sizeof(((struct chkwin_##rec *)0)->fname), CHKWIN_SHOW_##show,	\
	  CHKWIN_WHEN_##when },
#define TYPE(TYPE_, rname, ring)						\
	[CHKWIN_REC_##TYPE_] = { #rname,				\
		sizeof((struct chkwin_field[]){ CHKWIN_##TYPE_##_FIELDS(FIELD, rname) }) / \
		sizeof(struct chkwin_field),				\
		{ CHKWIN_##TYPE_##_FIELDS(FIELD, rname) } },
static const struct chkwin_schema built = { { CHKWIN_RECORDS(TYPE) } };
#undef FIELD
#undef TYPE

_Static_assert(CHKWIN_REC_TYPES <= CHKWIN_MAX_TYPES, "record type numbers fit the schema");

/*
 * Logs before version 4 carry no layout: theirs, as written then (version
 * 3 added the snapshot).  Never edited: a change to the record table is
 * what the record.N lines of newer logs are for.
 */
const char *const chkwin_legacy_layout[CHKWIN_REC_SNAPSHOT] = {
	"chksum end_ns:u64@0 seed:u32@8 length:u32@12 result:u32@16 dev:u32@20 "
	"caller:u16@24 irqs:u16@26",
	"verify ino:u64@0 dev:u32@8 stored:u32@12 computed:u32@16 caller:u16@20?meta "
	"block:u64@24?meta",
	"iget ino:u64@0 dev:u32@8 err:s32@12",
	"irq pc:x64@0 sp:x64@8 end_ns:u64@16 irq:u32@24 offset:u16@28 class:class8@30 "
	"el:u8@31 func:u8@32 ipi:str14@34",
	"softirq end_ns:u64@0 vec:u32@8",
	"block sector:u64@0 nr_sectors:u32@8 dev:u32@12 cmd_flags:u32@16 error:s32@20",
	"sample pc:x64@0 sp:x64@8 offset:u16@16 class:class8@18 el:u8@19 func:u8@20",
	"snapshot call_horizon:u64@0 arrival_horizon:u64@8 history:u32@16 calls:u32@20 "
	"arrivals:u32@24 blocks:u32@28 evicted:u32@32 trigger:type8@36",
};

static const char *const show_codes[] = {
	[CHKWIN_SHOW_DEC] = "u", [CHKWIN_SHOW_SDEC] = "s", [CHKWIN_SHOW_HEX] = "x",
	[CHKWIN_SHOW_CLASS] = "class", [CHKWIN_SHOW_TYPE] = "type", [CHKWIN_SHOW_STR] = "str",
};

void chkwin_schema_text(struct text *t)
{
	int n, i;

	for (n = 1; n < CHKWIN_REC_TYPES; n++) {
		const struct chkwin_rec_layout *r = &built.t[n];

		text_add(t, "record.%d=%s", n, r->name);
		for (i = 0; i < r->nfields; i++) {
			const struct chkwin_field *f = &r->f[i];

			if (f->show == CHKWIN_SHOW_PAD)
				continue;
			text_add(t, " %s:%s%d@%d%s", f->name, show_codes[f->show],
				 f->show == CHKWIN_SHOW_STR ? f->size : f->size * 8, f->offset,
				 f->when == CHKWIN_WHEN_METADATA ? "?meta" : "");
		}
		text_add(t, "\n");
	}
}

void chkwin_schema_legacy(struct chkwin_schema *s, unsigned int version)
{
	unsigned int n, types = version < 3 ? CHKWIN_REC_SNAPSHOT : CHKWIN_REC_SNAPSHOT + 1;

	memset(s, 0, sizeof(*s));
	for (n = 1; n < types; n++)
		chkwin_schema_line(s, n, chkwin_legacy_layout[n - 1],
				   strlen(chkwin_legacy_layout[n - 1]));
}

/* [a-z][a-z0-9_]*, 1-32 characters. */
static int good_name(const char *p, size_t n)
{
	size_t i;

	if (n == 0 || n > CHKWIN_NAME_MAX || p[0] < 'a' || p[0] > 'z')
		return 0;
	for (i = 1; i < n; i++)
		if (!((p[i] >= 'a' && p[i] <= 'z') || (p[i] >= '0' && p[i] <= '9') || p[i] == '_'))
			return 0;
	return 1;
}

/* 1-3 decimal digits. */
int chkwin_dec(const char *s, size_t n, uint64_t *out)
{
	uint64_t v = 0;
	size_t i;

	if (n == 0 || n > 20)
		return -1;
	for (i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -1;
		if (v > (UINT64_MAX - (uint64_t)(s[i] - '0')) / 10)
			return -1;
		v = v * 10 + (uint64_t)(s[i] - '0');
	}
	*out = v;
	return 0;
}

/* CODE into show and size (bytes). */
static int code(const char *p, size_t n, struct chkwin_field *f)
{
	unsigned int i;
	uint64_t width;

	for (i = 0; i < sizeof(show_codes) / sizeof(show_codes[0]); i++) {
		size_t k = strlen(show_codes[i]);

		/* A width is at most 3 digits: "u0008" is not a code. */
		if (n <= k || n - k > 3 || memcmp(p, show_codes[i], k) ||
		    chkwin_dec(p + k, n - k, &width))
			continue;
		if (i == CHKWIN_SHOW_STR) {
			if (width < 1 || width > CHKWIN_PAYLOAD)
				return -1;
			f->size = (uint8_t)width;
		} else {
			if (width != 8 && width != 16 && width != 32 && width != 64)
				return -1;
			f->size = (uint8_t)(width / 8);
		}
		f->show = (uint8_t)i;
		return 0;
	}
	return -1;
}

/* name:CODE@OFFSET[?meta] */
static const char *field(const char *p, size_t n, struct chkwin_field *f)
{
	const char *colon = memchr(p, ':', n), *at, *q;
	size_t rest;
	uint64_t off;

	memset(f, 0, sizeof(*f));
	if (!colon || !(at = memchr(colon, '@', n - (size_t)(colon - p))))
		return "a field that is not name:code@offset";
	if (!good_name(p, (size_t)(colon - p)))
		return "a bad name";
	memcpy(f->name, p, (size_t)(colon - p));
	if (code(colon + 1, (size_t)(at - colon - 1), f))
		return "a bad field code";
	rest = n - (size_t)(at + 1 - p);
	q = memchr(at + 1, '?', rest);
	if (q) {
		if ((size_t)(p + n - q) != 5 || memcmp(q, "?meta", 5))
			return "a field that is not name:code@offset";
		f->when = CHKWIN_WHEN_METADATA;
		rest = (size_t)(q - at - 1);
	}
	if (rest > 3 || chkwin_dec(at + 1, rest, &off))
		return "a field that is not name:code@offset";
	if (off + f->size > CHKWIN_PAYLOAD)
		return "a field beyond the 48-byte payload";
	f->offset = (uint8_t)off;
	return NULL;
}

const char *chkwin_schema_line(struct chkwin_schema *s, unsigned long n,
			       const char *val, size_t len)
{
	struct chkwin_rec_layout r;
	size_t start = 0, i;
	int k = 0, j, m;

	if (n < 1 || n >= CHKWIN_MAX_TYPES)
		return "not record.N (1-31)";
	memset(&r, 0, sizeof(r));
	for (i = 0; i <= len; i++) {
		const char *why;

		if (i < len && val[i] != ' ')
			continue;
		if (i == start)
			return "not TYPE FIELD... with single spaces";
		if (k == 0) {
			if (!good_name(val, i))
				return "a bad name";
			memcpy(r.name, val, i);
		} else {
			if (r.nfields == CHKWIN_MAX_FIELDS)
				return "more than 16 fields";
			why = field(val + start, i - start, &r.f[r.nfields]);
			if (why)
				return why;
			for (j = 0; j < r.nfields; j++)
				if (!strcmp(r.f[j].name, r.f[r.nfields].name))
					return "a field named twice";
			r.nfields++;
		}
		k++;
		start = i + 1;
	}
	if (r.nfields == 0)
		return "not TYPE FIELD... with single spaces";
	for (m = 1; m < CHKWIN_MAX_TYPES; m++)
		if ((unsigned long)m != n && !strcmp(s->t[m].name, r.name))
			return "a record type named twice";
	s->t[n] = r;
	return NULL;
}

const char *chkwin_schema_name(const struct chkwin_schema *s, unsigned int n)
{
	return n > 0 && n < CHKWIN_MAX_TYPES && s->t[n].name[0] ? s->t[n].name : NULL;
}
