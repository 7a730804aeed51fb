// SPDX-License-Identifier: GPL-2.0
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "strbuf.h"

static int reserve(struct text *t, size_t more)
{
	char *grown;
	size_t cap;

	if (t->len + more + 1 <= t->cap)
		return 0;
	cap = t->cap ? t->cap : 1024;
	while (cap < t->len + more + 1)
		cap *= 2;
	grown = realloc(t->buf, cap);
	if (!grown) {
		t->failed = 1;
		return -1;
	}
	t->buf = grown;
	t->cap = cap;
	return 0;
}

void text_add(struct text *t, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0 || reserve(t, (size_t)n))
		return;
	va_start(ap, fmt);
	vsnprintf(t->buf + t->len, (size_t)n + 1, fmt, ap);
	va_end(ap);
	t->len += (size_t)n;
}

void text_kv(struct text *t, const char *key, const char *value)
{
	size_t start, i;

	text_add(t, "%s=%s", key, value);
	if (t->failed)
		return;
	start = t->len - strlen(value);
	for (i = start; i < t->len; i++)
		if ((unsigned char)t->buf[i] < ' ')
			t->buf[i] = ' ';
	text_add(t, "\n");
}

void text_free(struct text *t)
{
	free(t->buf);
	memset(t, 0, sizeof(*t));
}
