/* Reading and matching the allow-list (see allow.h for the format). */
#include "allow.h"
#include "image.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int add(struct allow *a, struct allow_entry *e, char *err)
{
	struct allow_entry *p = realloc(a->e, (a->n + 1) * sizeof(*p));

	if (!p) {
		snprintf(err, ERRLEN, "out of memory");
		return -1;
	}
	a->e = p;
	p[a->n++] = *e;
	return 0;
}

int allow_load(struct allow *a, const char *path, char *err)
{
	FILE *f = fopen(path, "r");
	long size;
	char *line, *save = NULL;
	int lineno = 0;

	memset(a, 0, sizeof(*a));
	if (!f) {
		snprintf(err, ERRLEN, "%s: %s", path, strerror(errno));
		return -1;
	}
	if (fseek(f, 0, SEEK_END) || (size = ftell(f)) < 0 ||
	    fseek(f, 0, SEEK_SET) || !(a->text = calloc(1, size + 1)) ||
	    fread(a->text, 1, size, f) != (size_t)size) {
		snprintf(err, ERRLEN, "%s: cannot read it", path);
		fclose(f);
		return -1;
	}
	fclose(f);
	/* strtok_r would skip empty lines and lose the line numbers */
	for (line = a->text; line; line = save) {
		struct allow_entry e = { 0 };
		char *p, *plus;

		save = strchr(line, '\n');
		if (save)
			*save++ = 0;
		lineno++;
		if ((p = strchr(line, '#')))
			*p = 0;
		line += strspn(line, " \t");
		if (!*line)
			continue;
		e.func = line;
		e.line = lineno;
		p = line + strcspn(line, " \t");
		if (*p)
			*p++ = 0;
		p += strspn(p, " \t");
		e.reason = p;
		for (p += strlen(p); p > e.reason && (p[-1] == ' ' || p[-1] == '\t'); )
			*--p = 0;
		if (!*e.reason) {
			snprintf(err, ERRLEN, "%s:%d: %s has no reason", path,
				 lineno, e.func);
			return -1;
		}
		if ((plus = strchr(e.func, '+'))) {
			char *end;

			*plus = 0;
			e.offset = strtoull(plus + 1, &end, 0);
			if (end == plus + 1 || *end) {
				snprintf(err, ERRLEN, "%s:%d: bad offset in %s+%s",
					 path, lineno, e.func, plus + 1);
				return -1;
			}
			e.has_offset = 1;
		}
		if (add(a, &e, err))
			return -1;
	}
	return 0;
}

struct allow_entry *allow_match(struct allow *a, const char *func,
				uint64_t offset)
{
	size_t i;

	for (i = 0; i < a->n; i++)
		if (!strcmp(a->e[i].func, func) &&
		    (!a->e[i].has_offset || a->e[i].offset == offset))
			return &a->e[i];
	return NULL;
}

void allow_free(struct allow *a)
{
	free(a->e);
	free(a->text);
}
