/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A log's record layout: the record.N lines of its header (version 4 on),
 * written from bpf/chkwin.h's record table; for older logs, the layout
 * they were written with.  Both readers parse the lines by the same rules
 * (docs/log-format.md, "Record layout"; analysis/chkwinlog.py).
 */
#ifndef CHKWIN_SCHEMA_H
#define CHKWIN_SCHEMA_H

#include <stddef.h>
#include <stdint.h>
#include <linux/types.h>

#include "chkwin.h"
#include "strbuf.h"

#define CHKWIN_MAX_TYPES	32	/* record type numbers 1-31 */
#define CHKWIN_MAX_FIELDS	16
#define CHKWIN_NAME_MAX		32
#define CHKWIN_PAYLOAD		(CHKWIN_REC_SIZE - 16)

enum chkwin_show {
	CHKWIN_SHOW_DEC,	/* unsigned decimal */
	CHKWIN_SHOW_SDEC,	/* signed decimal */
	CHKWIN_SHOW_HEX,	/* "0x..." string */
	CHKWIN_SHOW_CLASS,	/* enum chkwin_class, by name */
	CHKWIN_SHOW_TYPE,	/* a record type, by name */
	CHKWIN_SHOW_STR,	/* NUL-padded string */
	CHKWIN_SHOW_PAD,	/* not printed, not in the layout lines */
};

enum chkwin_when {
	CHKWIN_WHEN_ALWAYS,
	CHKWIN_WHEN_METADATA,	/* only with CHKWIN_F_METADATA */
};

struct chkwin_field {
	char name[CHKWIN_NAME_MAX + 1];
	uint8_t offset;		/* in the payload */
	uint8_t size;
	uint8_t show;		/* enum chkwin_show */
	uint8_t when;		/* enum chkwin_when */
};

struct chkwin_rec_layout {
	char name[CHKWIN_NAME_MAX + 1];	/* "": no record type of this number */
	int nfields;
	struct chkwin_field f[CHKWIN_MAX_FIELDS];
};

struct chkwin_schema {
	struct chkwin_rec_layout t[CHKWIN_MAX_TYPES];
};

/* This build's record.N lines, from the record table, for the header. */
void chkwin_schema_text(struct text *t);
/* The record.N values of version 3 (1-2: without the snapshot), fixed. */
extern const char *const chkwin_legacy_layout[CHKWIN_REC_SNAPSHOT];
/* The layout of a version 1-3 log, which carries none. */
void chkwin_schema_legacy(struct chkwin_schema *s, unsigned int version);
/* Parse the value of header line record.N into s: NULL, or why it is wrong. */
const char *chkwin_schema_line(struct chkwin_schema *s, unsigned long n,
			       const char *val, size_t len);
/* The name of record type n in s, or NULL. */
const char *chkwin_schema_name(const struct chkwin_schema *s, unsigned int n);
/*
 * A decimal u64 of n bytes at s: 1-20 digits, no sign, no overflow; the
 * one number parser of the log's texts.  0, or -1 with *out untouched.
 */
int chkwin_dec(const char *s, size_t n, uint64_t *out);

#endif /* CHKWIN_SCHEMA_H */
