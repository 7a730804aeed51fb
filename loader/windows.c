// SPDX-License-Identifier: GPL-2.0
/* The windows file (docs/windows.md): the same rules as analysis/windows.py. */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "windows.h"

#define MODULE_CHARS "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_"
#define SYMBOL_CHARS MODULE_CHARS ".$"
#define HEX_CHARS "0123456789abcdefABCDEF"
#define MAX_FIELDS 8

__attribute__((format(printf, 3, 4)))
static int failed(char *err, size_t len, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, len, fmt, ap);
	va_end(ap);
	return -1;
}

static int all_in(const char *s, size_t n, const char *chars)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (!s[i] || !strchr(chars, s[i]))
			return 0;
	return 1;
}

/* [MODULE:]SYMBOL[+0xOFF], OFF a multiple of 4. */
static int parse_location(const char *s, struct chkwin_location *loc)
{
	const char *colon = strchr(s, ':'), *sym = s, *plus;
	size_t n;

	memset(loc, 0, sizeof(*loc));
	if (colon) {
		n = (size_t)(colon - s);
		if (n < 1 || n >= sizeof(loc->module) || !all_in(s, n, MODULE_CHARS))
			return -1;
		memcpy(loc->module, s, n);
		sym = colon + 1;
	}
	plus = strchr(sym, '+');
	n = plus ? (size_t)(plus - sym) : strlen(sym);
	if (n < 1 || n >= sizeof(loc->symbol) || !all_in(sym, n, SYMBOL_CHARS))
		return -1;
	memcpy(loc->symbol, sym, n);
	if (plus) {
		const char *hex = plus + 3;

		n = strlen(hex);
		if (strncmp(plus, "+0x", 3) || n < 1 || n > 8 || !all_in(hex, n, HEX_CHARS))
			return -1;
		loc->offset = (uint32_t)strtoul(hex, NULL, 16);
	}
	return loc->offset % 4 ? -1 : 0;
}

static void location_text(const struct chkwin_location *loc, char *buf, size_t len)
{
	snprintf(buf, len, "%s%s%s+0x%" PRIx32, loc->module, loc->module[0] ? ":" : "",
		 loc->symbol, loc->offset);
}

/* -?D{1,10}, D a decimal digit. */
static int decimal(const char *s, size_t n)
{
	if (n && *s == '-') {
		s++;
		n--;
	}
	return n >= 1 && n <= 10 && all_in(s, n, "0123456789");
}

static int below_sp(const char *v)
{
	const char *dots = strstr(v, "..");

	return dots ? decimal(v, (size_t)(dots - v)) && decimal(dots + 2, strlen(dots + 2)) :
		      decimal(v, strlen(v));
}

/* One window line, split at single spaces; NULL or why it is none. */
static const char *parse_window(char **f, int nf, struct chkwin_watch *w, char *why,
				size_t len)
{
	static const char *const keys[] = { "size", "release", "access", "below_sp" };
	int seen[4] = { 0 }, i, k;
	size_t n;

	memset(w, 0, sizeof(*w));
	if (nf < 3)
		return "not NAME FIRST LAST [key=value...]";
	n = strlen(f[0]);
	if (n < 1 || n > CHKWIN_WATCH_NAME_MAX || !all_in(f[0], n, CHKWIN_WATCH_NAME_CHARS)) {
		snprintf(why, len, "bad window name '%.40s'", f[0]);
		return why;
	}
	memcpy(w->name, f[0], n);
	for (i = 1; i <= 2; i++) {
		if (parse_location(f[i], i == 1 ? &w->first : &w->last)) {
			snprintf(why, len, "%s: '%.60s' is not [MODULE:]SYMBOL[+0xOFF] with OFF "
				 "a multiple of 4", w->name, f[i]);
			return why;
		}
	}
	if (strcmp(w->first.module, w->last.module) || strcmp(w->first.symbol, w->last.symbol)) {
		snprintf(why, len, "%s: FIRST and LAST lie in different symbols", w->name);
		return why;
	}
	if (w->first.offset > w->last.offset) {
		snprintf(why, len, "%s: LAST comes before FIRST", w->name);
		return why;
	}
	for (i = 3; i < nf; i++) {
		char *eq = strchr(f[i], '=');
		struct chkwin_location loc;
		const char *v;
		int ok;

		for (k = 0; eq && k < 4; k++)
			if ((size_t)(eq - f[i]) == strlen(keys[k]) &&
			    !strncmp(f[i], keys[k], strlen(keys[k])))
				break;
		if (!eq || k == 4) {
			snprintf(why, len, "%s: unknown attribute '%.40s' (known: size, release, "
				 "access, below_sp)", w->name, f[i]);
			return why;
		}
		if (seen[k]++) {
			snprintf(why, len, "%s: %s given twice", w->name, keys[k]);
			return why;
		}
		v = eq + 1;
		n = strlen(v);
		if (k == 0)
			ok = n >= 3 && n <= 10 && !strncmp(v, "0x", 2) && all_in(v + 2, n - 2, HEX_CHARS);
		else if (k == 3)
			ok = below_sp(v);
		else
			ok = !parse_location(v, &loc);
		if (!ok) {
			snprintf(why, len, "%s: bad %s '%.40s'", w->name, keys[k], v);
			return why;
		}
		if (k == 0)
			w->size = strtoull(v, NULL, 16);
	}
	if (seen[0] && w->last.offset >= w->size) {
		snprintf(why, len, "%s: LAST lies past the symbol's size 0x%" PRIx64, w->name,
			 w->size);
		return why;
	}
	return NULL;
}

/* Fields at single spaces: "a  b" has an empty field, as Python's split(" "). */
static int split(char *line, char **f)
{
	int n = 0;

	for (;;) {
		char *sp = strchr(line, ' ');

		if (n == MAX_FIELDS)
			return n + 1;
		f[n++] = line;
		if (!sp)
			return n;
		*sp = '\0';
		line = sp + 1;
	}
}

int chkwin_windows_read(const char *path, struct chkwin_windows *ws, char *err,
			size_t errlen)
{
	char line[CHKWIN_WINDOWS_LINE_MAX + 2], why[512], *f[MAX_FIELDS + 1];
	FILE *file = fopen(path, "r");
	const char *bad;
	int lineno = 0, i, nf;
	size_t n;

	ws->w = NULL;
	ws->n = 0;
	if (!file)
		return failed(err, errlen, "%s: %s", path, strerror(errno));
	while (fgets(line, sizeof(line), file)) {
		lineno++;
		n = strlen(line);
		if (n && line[n - 1] == '\n')
			line[--n] = '\0';
		else if (!feof(file))
			n = CHKWIN_WINDOWS_LINE_MAX + 1;
		if (lineno == 1) {
			if (strcmp(line, CHKWIN_WINDOWS_MAGIC))
				goto not_windows;
			continue;
		}
		if (n > CHKWIN_WINDOWS_LINE_MAX)
			goto too_long;
		if (!n || line[0] == '#')
			continue;
		if (ws->n == CHKWIN_MAX_WATCHED) {
			fclose(file);
			return failed(err, errlen, "%s: line %d: more than %d windows", path, lineno,
				      CHKWIN_MAX_WATCHED);
		}
		if (!ws->w) {
			ws->w = calloc(CHKWIN_MAX_WATCHED, sizeof(*ws->w));
			if (!ws->w) {
				fclose(file);
				return failed(err, errlen, "%s: out of memory", path);
			}
		}
		nf = split(line, f);
		bad = nf > MAX_FIELDS ? "not NAME FIRST LAST [key=value...]" :
			parse_window(f, nf, &ws->w[ws->n], why, sizeof(why));
		if (bad) {
			fclose(file);
			return failed(err, errlen, "%s: line %d: %s", path, lineno, bad);
		}
		for (i = 0; i < ws->n; i++)
			if (!strcmp(ws->w[i].name, ws->w[ws->n].name)) {
				fclose(file);
				return failed(err, errlen, "%s: line %d: window %s named twice",
					      path, lineno, ws->w[i].name);
			}
		ws->n++;
	}
	fclose(file);
	if (lineno == 0)
		return failed(err, errlen, "%s: line 1: not a windows file (want '%s' first)",
			      path, CHKWIN_WINDOWS_MAGIC);
	return 0;
too_long:
	fclose(file);
	return failed(err, errlen, "%s: line %d: longer than %d bytes", path, lineno,
		      CHKWIN_WINDOWS_LINE_MAX);
not_windows:
	fclose(file);
	return failed(err, errlen, "%s: line 1: not a windows file (want '%s' first)", path,
		      CHKWIN_WINDOWS_MAGIC);
}

static int by_first(const void *a, const void *b)
{
	const struct chkwin_watch *x = a, *y = b;

	return x->first_addr < y->first_addr ? -1 : x->first_addr > y->first_addr;
}

int chkwin_windows_place(struct chkwin_windows *ws, const struct ksyms *ks, char *err,
			 size_t errlen)
{
	char where[256];
	int i, matches;

	for (i = 0; i < ws->n; i++) {
		struct chkwin_watch *w = &ws->w[i];
		const char *module = w->first.module[0] ? w->first.module : NULL;
		const struct ksym *s = ksyms_text_in(ks, w->first.symbol, module, &matches);
		uint64_t start, end;

		if (!s && module && !ksyms_has_module(ks, module))
			return failed(err, errlen, "%s: module %s is not loaded", w->name, module);
		if (!s && matches > 1)
			return failed(err, errlen, "%s: %d text symbols are called %s%s%s", w->name,
				      matches, w->first.symbol, module ? " in module " : "",
				      module ? module : "");
		if (!s)
			return failed(err, errlen, "%s: no symbol %s%s%s", w->name, w->first.symbol,
				      module ? " in module " : "", module ? module : "");
		if (ksyms_range_of(ks, s, &start, &end))
			end = UINT64_MAX;
		if (w->size)
			end = start + w->size;
		if (start + w->last.offset >= end) {
			location_text(&w->last, where, sizeof(where));
			return failed(err, errlen, "%s: %s is past the end of %s (0x%" PRIx64
				      " bytes)", w->name, where, w->last.symbol, end - start);
		}
		w->first_addr = start + w->first.offset;
		w->last_addr = start + w->last.offset;
	}
	qsort(ws->w, (size_t)ws->n, sizeof(*ws->w), by_first);
	for (i = 1; i < ws->n; i++)
		if (ws->w[i].first_addr <= ws->w[i - 1].last_addr)
			return failed(err, errlen, "windows %s and %s overlap", ws->w[i - 1].name,
				      ws->w[i].name);
	return 0;
}

void chkwin_windows_free(struct chkwin_windows *ws)
{
	free(ws->w);
	ws->w = NULL;
	ws->n = 0;
}
