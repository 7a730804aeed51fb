// SPDX-License-Identifier: GPL-2.0
/* /proc/kallsyms reader: the loader's only source of kernel addresses. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kallsyms.h"

static int by_addr(const void *a, const void *b)
{
	const struct ksym *x = a, *y = b;

	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

/* Equal names keep the address order (the array's), so the first is the lowest. */
static int by_name(const void *a, const void *b)
{
	const struct ksym *x = *(const struct ksym *const *)a;
	const struct ksym *y = *(const struct ksym *const *)b;
	int c = strcmp(x->name, y->name);

	return c ? c : (x > y) - (x < y);
}

void ksyms_free(struct ksyms *k)
{
	size_t i;

	for (i = 0; i < k->count; i++) {
		free(k->syms[i].name);
		free(k->syms[i].module);
	}
	free(k->syms);
	free(k->by_name);
	k->syms = NULL;
	k->by_name = NULL;
	k->count = 0;
}

int ksyms_load(struct ksyms *k, const char *path)
{
	FILE *f = fopen(path, "r");
	size_t cap = 0, nonzero = 0;
	char line[512];

	size_t i;

	k->syms = NULL;
	k->by_name = NULL;
	k->count = 0;
	if (!f) {
		int err = errno;

		fprintf(stderr, "chkwin: error: cannot read %s: %s\n", path, strerror(err));
		return -err;
	}
	while (fgets(line, sizeof(line), f)) {
		unsigned long long addr;
		char type, name[256], module[64];
		int got = sscanf(line, "%llx %c %255s [%63[^]]", &addr, &type, name, module);

		if (got < 3)
			continue;
		if (k->count == cap) {
			struct ksym *grown;

			cap = cap ? cap * 2 : 65536;
			grown = realloc(k->syms, cap * sizeof(*grown));
			if (!grown)
				goto nomem;
			k->syms = grown;
		}
		k->syms[k->count].addr = addr;
		k->syms[k->count].type = type;
		k->syms[k->count].name = strdup(name);
		k->syms[k->count].module = got == 4 ? strdup(module) : NULL;
		if (!k->syms[k->count].name || (got == 4 && !k->syms[k->count].module)) {
			k->count++;	/* so that ksyms_free() frees what it got */
			goto nomem;
		}
		k->count++;
		nonzero += addr != 0;
	}
	fclose(f);
	if (!nonzero) {
		fprintf(stderr, "chkwin: error: %s shows no addresses (run as root, kptr_restrict)\n",
			path);
		ksyms_free(k);
		return -EPERM;
	}
	qsort(k->syms, k->count, sizeof(*k->syms), by_addr);
	k->by_name = malloc(k->count * sizeof(*k->by_name));
	if (!k->by_name) {
		ksyms_free(k);
		fprintf(stderr, "chkwin: error: out of memory reading %s\n", path);
		return -ENOMEM;
	}
	for (i = 0; i < k->count; i++)
		k->by_name[i] = &k->syms[i];
	qsort(k->by_name, k->count, sizeof(*k->by_name), by_name);
	return 0;
nomem:
	fclose(f);
	ksyms_free(k);
	fprintf(stderr, "chkwin: error: out of memory reading %s\n", path);
	return -ENOMEM;
}

/* Index in by_name of the first symbol called name, or k->count. */
static size_t first_named(const struct ksyms *k, const char *name)
{
	size_t lo = 0, hi = k->count;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (strcmp(k->by_name[mid]->name, name) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < k->count && !strcmp(k->by_name[lo]->name, name) ? lo : k->count;
}

static const struct ksym *find(const struct ksyms *k, const char *name)
{
	size_t i = first_named(k, name);

	return i < k->count ? k->by_name[i] : NULL;
}

const struct ksym *ksyms_at(const struct ksyms *k, uint64_t addr)
{
	size_t lo = 0, hi = k->count;

	/* The first symbol above addr, by halving; the one before it holds addr. */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (k->syms[mid].addr <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo ? &k->syms[lo - 1] : NULL;
}

uint64_t ksyms_addr(const struct ksyms *k, const char *name)
{
	const struct ksym *s = find(k, name);

	return s ? s->addr : 0;
}

const struct ksym *ksyms_pick(const struct ksyms *k, const char *name,
			      const char *module, int *count)
{
	const struct ksym *only = NULL, *in_module = NULL;
	size_t i;

	*count = 0;
	for (i = first_named(k, name); i < k->count && !strcmp(k->by_name[i]->name, name); i++) {
		const struct ksym *s = k->by_name[i];

		++*count;
		only = s;
		if (module ? s->module && !strcmp(s->module, module) : !s->module)
			in_module = s;
	}
	return *count == 1 ? only : in_module;
}

const struct ksym *ksyms_text_in(const struct ksyms *k, const char *name,
				 const char *module, int *matches)
{
	const struct ksym *found = NULL;
	size_t i;

	*matches = 0;
	for (i = first_named(k, name); i < k->count && !strcmp(k->by_name[i]->name, name); i++) {
		const struct ksym *s = k->by_name[i];

		if (!strchr("tTwW", s->type) || !s->type)
			continue;
		if (module ? !s->module || strcmp(s->module, module) : !!s->module)
			continue;
		++*matches;
		found = s;
	}
	return *matches == 1 ? found : NULL;
}

/* Whether marker lies in s's neighbourhood, walking by step (1 or -1). */
static int near(const struct ksyms *k, const struct ksym *s, const char *name,
		const char *marker, int step)
{
	const struct ksym *t = s + step;

	for (; t >= k->syms && t < k->syms + k->count; t += step) {
		if (t->module)
			continue;
		if (!strcmp(t->name, marker))
			return 1;
		if (t->type == 'T' || !strcmp(t->name, name))
			return 0;
	}
	return 0;
}

const struct ksym *ksyms_pick_near(const struct ksyms *k, const char *name,
				   const char *marker)
{
	const struct ksym *found = NULL;
	int n = 0;
	size_t i;

	for (i = first_named(k, name); i < k->count && !strcmp(k->by_name[i]->name, name); i++) {
		const struct ksym *s = k->by_name[i];

		if (!s->module && (near(k, s, name, marker, -1) || near(k, s, name, marker, 1))) {
			found = s;
			n++;
		}
	}
	return n == 1 ? found : NULL;
}

int ksyms_has_module(const struct ksyms *k, const char *module)
{
	size_t i;

	for (i = 0; i < k->count; i++)
		if (k->syms[i].module && !strcmp(k->syms[i].module, module))
			return 1;
	return 0;
}

int ksyms_range(const struct ksyms *k, const char *name, uint64_t *start, uint64_t *end)
{
	const struct ksym *s = find(k, name);

	return s ? ksyms_range_of(k, s, start, end) : -ENOENT;
}

int ksyms_range_of(const struct ksyms *k, const struct ksym *s, uint64_t *start,
		   uint64_t *end)
{
	const struct ksym *last = k->syms + k->count;
	const char *name = s->name;
	size_t len = strlen(name);

	*start = s->addr;
	/* Equal addresses sort in any order: scan from the first of them. */
	while (s > k->syms && s[-1].addr == *start)
		s--;
	for (; s < last; s++) {
		if (s->addr <= *start)
			continue;
		if (!strncmp(s->name, name, len) && s->name[len] == '_')
			continue;
		*end = s->addr;
		return 0;
	}
	return -ENOENT;
}
