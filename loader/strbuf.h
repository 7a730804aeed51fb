/* SPDX-License-Identifier: GPL-2.0 */
/* A growing string for the log's key=value header and trailer. */
#ifndef CHKWIN_STRBUF_H
#define CHKWIN_STRBUF_H

#include <stddef.h>
#include <stdio.h>

struct text {
	char *buf;
	size_t len;
	size_t cap;
	int failed;	/* an allocation failed; buf holds what fit */
};

__attribute__((format(printf, 2, 3)))
void text_add(struct text *t, const char *fmt, ...);
/* key=value with the value's newlines and control bytes turned to spaces. */
void text_kv(struct text *t, const char *key, const char *value);
void text_free(struct text *t);

#endif /* CHKWIN_STRBUF_H */
