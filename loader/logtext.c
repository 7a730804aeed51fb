// SPDX-License-Identifier: GPL-2.0
/*
 * Checks of the log's key=value text: a reader that trusted a flipped
 * `cpus` or a 4 GiB function span would size its tables by it.  The rules
 * are docs/log-format.md's "Checked values", shared with chkwinlog.py.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "logtext.h"
#include "names.h"

#define STR(x)		#x
#define XSTR(x)		STR(x)

struct line {
	const char *key, *val;
	size_t klen, vlen, at;
};

/* 0x followed by 1-16 hex digits. */
static int hex(const char *s, size_t n, uint64_t *out)
{
	uint64_t v = 0;
	size_t i;

	if (n < 3 || n > 18 || s[0] != '0' || s[1] != 'x')
		return -1;
	for (i = 2; i < n; i++) {
		char ch = s[i];
		int d = ch >= '0' && ch <= '9' ? ch - '0' :
			ch >= 'a' && ch <= 'f' ? ch - 'a' + 10 :
			ch >= 'A' && ch <= 'F' ? ch - 'A' + 10 : -1;

		if (d < 0)
			return -1;
		v = v << 4 | (uint64_t)d;
	}
	*out = v;
	return 0;
}

/* Fields separated by single spaces, none empty: how many, and where. */
static int fields(const char *s, size_t n, const char **f, size_t *flen, int max)
{
	int k = 0;
	size_t start = 0, i;

	for (i = 0; i <= n; i++) {
		if (i < n && s[i] != ' ')
			continue;
		if (i == start || k == max)
			return -1;
		f[k] = s + start;
		flen[k++] = i - start;
		start = i + 1;
	}
	return k;
}

static int is(const struct line *l, const char *key)
{
	return l->klen == strlen(key) && !memcmp(l->key, key, l->klen);
}

/* key is PREFIX followed by a decimal index no larger than max. */
static int indexed(const struct line *l, const char *prefix, uint64_t max)
{
	size_t p = strlen(prefix);
	uint64_t n;

	return l->klen > p && !memcmp(l->key, prefix, p) &&
	       !chkwin_dec(l->key + p, l->klen - p, &n) && n <= max;
}

static int has_prefix(const struct line *l, const char *prefix)
{
	size_t p = strlen(prefix);

	return l->klen > p && !memcmp(l->key, prefix, p);
}

/* A window's name as docs/windows.md allows it. */
static int window_name(const char *s, size_t n)
{
	size_t i;

	if (n == 0 || n > CHKWIN_WATCH_NAME_MAX)
		return 0;
	for (i = 0; i < n; i++)
		if (!strchr(CHKWIN_WATCH_NAME_CHARS, s[i]) || !s[i])
			return 0;
	return 1;
}

/* START END in hex, start <= end (start < end when strict), span bounded. */
static int range(const char *const *f, const size_t *flen, int strict)
{
	uint64_t a, b;

	return !hex(f[0], flen[0], &a) && !hex(f[1], flen[1], &b) &&
	       (strict ? a < b : a <= b) && b - a <= CHKWIN_MAX_SPAN ? 0 : -1;
}

static const char *check_header_line(const struct line *l, struct chkwin_text_check *c)
{
	const char *f[3];
	size_t flen[3];
	uint64_t v;

	if (is(l, "cpus")) {
		if (chkwin_dec(l->val, l->vlen, &v) || v < 1 || v > CHKWIN_MAX_CPUS)
			return "not a CPU count (1-4096)";
		c->cpus = (unsigned int)v;
	} else if (is(l, "started_ns")) {
		if (chkwin_dec(l->val, l->vlen, &v))
			return "not a whole number";
		c->has_started = 1;
		c->started_ns = v;
	} else if (is(l, "sample_hz")) {
		if (chkwin_dec(l->val, l->vlen, &v))
			return "not a whole number";
	} else if (is(l, "target_cpu")) {
		if (!(l->vlen == 2 && !memcmp(l->val, "-1", 2)) && chkwin_dec(l->val, l->vlen, &v))
			return "not -1 or a CPU number";
	} else if (is(l, "chksum_window_width")) {
		if (!(l->vlen == 6 && !memcmp(l->val, "absent", 6)) && chkwin_dec(l->val, l->vlen, &v))
			return "not absent or a whole number";
	} else if (has_prefix(l, "func.")) {
		if (!indexed(l, "func.", 255))
			return "not func.N";
		if (fields(l->val, l->vlen, f, flen, 3) != 3 || range(f + 1, flen + 1, 1))
			return "not NAME START END with 0 < END - START <= 1 MiB";
	} else if (is(l, "window") || is(l, "window.exact")) {
		if (fields(l->val, l->vlen, f, flen, 2) != 2 || range(f, flen, 0))
			return "not START END with 0 <= END - START <= 1 MiB";
	} else if (has_prefix(l, "watch.")) {
		if (!indexed(l, "watch.", CHKWIN_MAX_WATCHED - 1))
			return "not watch.N (0-" XSTR(CHKWIN_MAX_WATCHED) " - 1)";
		if (fields(l->val, l->vlen, f, flen, 3) != 3 || !window_name(f[0], flen[0]) ||
		    range(f + 1, flen + 1, 0))
			return "not NAME FIRST LAST with 0 <= LAST - FIRST <= 1 MiB";
	} else if (has_prefix(l, "record.")) {
		if (!indexed(l, "record.", CHKWIN_MAX_TYPES - 1) ||
		    chkwin_dec(l->key + 7, l->klen - 7, &v) || v == 0)
			return "not record.N (1-31)";
		c->has_schema = 1;
		return chkwin_schema_line(&c->schema, (unsigned long)v, l->val, l->vlen);
	} else if (has_prefix(l, "caller.") || has_prefix(l, "irq.")) {
		if (!indexed(l, "caller.", UINT32_MAX) && !indexed(l, "irq.", UINT32_MAX))
			return "not a numbered key";
	}
	return NULL;
}

static const char *check_trailer_line(const struct line *l, struct chkwin_text_check *c)
{
	const char *f[CHKWIN_HIST_SLOTS];
	size_t flen[CHKWIN_HIST_SLOTS];
	uint64_t v, slot;
	int i, n;

	if (is(l, "ended_ns")) {
		if (chkwin_dec(l->val, l->vlen, &v))
			return "not a whole number";
		if (c->has_started && v < c->started_ns)
			return "ends before the header's started_ns";
	} else if (has_prefix(l, "lost.") || has_prefix(l, "count.")) {
		if (chkwin_dec(l->val, l->vlen, &v) &&
		    !(l->vlen == strlen(CHKWIN_NOT_ATTACHED) &&
		      !memcmp(l->val, CHKWIN_NOT_ATTACHED, l->vlen)))
			return "not a whole number or " CHKWIN_NOT_ATTACHED;
	} else if (has_prefix(l, "records.")) {
		if (chkwin_dec(l->val, l->vlen, &v))
			return "not a whole number";
		for (i = 1; i < CHKWIN_MAX_TYPES; i++) {
			const char *name = chkwin_schema_name(&c->schema, (unsigned int)i);

			if (name && l->klen == 8 + strlen(name) && has_prefix(l, "records.") &&
			    !memcmp(l->key + 8, name, strlen(name))) {
				c->has_records[i] = 1;
				c->records[i] = v;
				c->records_line[i] = l->at;
			}
		}
	} else if (has_prefix(l, "hist.")) {
		n = fields(l->val, l->vlen, f, flen, CHKWIN_HIST_SLOTS);
		if (n < 0)
			return "not SLOT:COUNT pairs";
		for (i = 0; i < n; i++) {
			const char *colon = memchr(f[i], ':', flen[i]);

			if (!colon || chkwin_dec(f[i], (size_t)(colon - f[i]), &slot) ||
			    slot >= CHKWIN_HIST_SLOTS ||
			    chkwin_dec(colon + 1, flen[i] - (size_t)(colon - f[i]) - 1, &v))
				return "not SLOT:COUNT pairs";
		}
	}
	return NULL;
}

static int bad(struct chkwin_text_check *c, const struct line *l, size_t at,
	       const char *why)
{
	char key[33];
	size_t i, n = l ? (l->klen < 32 ? l->klen : 32) : 0;

	for (i = 0; i < n; i++)
		key[i] = l->key[i] > ' ' && l->key[i] < 0x7f ? l->key[i] : '?';
	key[n] = '\0';
	c->bad_at = at;
	if (l)
		snprintf(c->why, sizeof(c->why), "key '%s': %s", key, why);
	else
		snprintf(c->why, sizeof(c->why), "%s", why);
	return -1;
}

static int by_key_then_place(const void *a, const void *b)
{
	const struct line *x = *(const struct line *const *)a;
	const struct line *y = *(const struct line *const *)b;
	size_t n = x->klen < y->klen ? x->klen : y->klen;
	int c = memcmp(x->key, y->key, n);

	if (c)
		return c;
	if (x->klen != y->klen)
		return x->klen < y->klen ? -1 : 1;
	return x->at < y->at ? -1 : x->at > y->at;
}

/*
 * The first line (in the text's order) whose key an earlier line has, or
 * NULL: sorted by key and place, the second of each run of equal keys.
 */
static const struct line *first_duplicate(struct line *lines, int n)
{
	static struct line *order[CHKWIN_MAX_LINES];
	const struct line *dup = NULL;
	int i;

	for (i = 0; i < n; i++)
		order[i] = &lines[i];
	qsort(order, (size_t)n, sizeof(order[0]), by_key_then_place);
	for (i = 1; i < n; i++) {
		const struct line *a = order[i - 1], *b = order[i];

		if (a->klen == b->klen && !memcmp(a->key, b->key, a->klen) &&
		    (i < 2 || order[i - 2]->klen != a->klen ||
		     memcmp(order[i - 2]->key, a->key, a->klen)) &&
		    (!dup || b->at < dup->at))
			dup = b;
	}
	return dup;
}

/* The text's shape fails at pos; a duplicate key before it fails first. */
static int bad_shape(struct chkwin_text_check *c, struct line *lines, int n,
		     size_t pos, const char *why)
{
	const struct line *dup = first_duplicate(lines, n);

	return dup ? bad(c, dup, dup->at, "duplicate key") : bad(c, NULL, pos, why);
}

int chkwin_text_check(const char *text, size_t len, int trailer,
		      struct chkwin_text_check *c)
{
	static struct line lines[CHKWIN_MAX_LINES];
	const struct line *dup;
	size_t pos = 0;
	int n = 0, i;

	while (pos < len) {
		const char *p = text + pos;
		const char *nl = memchr(p, '\n', len - pos);
		size_t end = nl ? (size_t)(nl - text) : len;
		const char *eq = memchr(p, '=', end - pos);
		struct line *l = &lines[n];

		if (end == pos) {
			pos = end + 1;
			continue;
		}
		if (n == CHKWIN_MAX_LINES)
			return bad_shape(c, lines, n, pos,
					 "more than " XSTR(CHKWIN_MAX_LINES) " lines");
		if (!eq || eq == p)
			return bad_shape(c, lines, n, pos, "a line that is not key=value");
		l->key = p;
		l->klen = (size_t)(eq - p);
		l->val = eq + 1;
		l->vlen = end - (size_t)(eq + 1 - text);
		l->at = pos;
		n++;
		pos = end + 1;
	}
	dup = first_duplicate(lines, n);
	if (dup)
		return bad(c, dup, dup->at, "duplicate key");
	for (i = 0; i < n; i++) {
		const char *why = trailer ? check_trailer_line(&lines[i], c) :
					    check_header_line(&lines[i], c);

		if (why)
			return bad(c, &lines[i], lines[i].at, why);
	}
	return 0;
}
