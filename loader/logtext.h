/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The rules every value of the log's header and trailer text must follow
 * (docs/log-format.md, "Checked values"); analysis/chkwinlog.py applies
 * the same rules, and the differential test holds the two to it.
 */
#ifndef CHKWIN_LOGTEXT_H
#define CHKWIN_LOGTEXT_H

#include <stddef.h>
#include <stdint.h>

#include <linux/types.h>

#include "chkwin.h"
#include "schema.h"

#define CHKWIN_MAX_CPUS		4096
#define CHKWIN_MAX_LINES	16384	/* of a header or a trailer */
#define CHKWIN_MAX_SPAN		(1u << 20)	/* bytes of a func.N or window range */

struct chkwin_text_check {
	/* in: what the header said, for the trailer's checks */
	int has_started;
	uint64_t started_ns;
	/* out of the header, and in for the trailer: the record layout */
	struct chkwin_schema schema;
	int has_schema;				/* header: record.N lines seen */
	/* out */
	unsigned int cpus;			/* header: 0 if absent */
	int has_records[CHKWIN_MAX_TYPES];	/* trailer: records.TYPE present */
	uint64_t records[CHKWIN_MAX_TYPES];
	size_t records_line[CHKWIN_MAX_TYPES];	/* offset of that line in the text */
	size_t bad_at;				/* offset in the text of a bad line */
	char why[120];
};

/*
 * Check a header (trailer = 0) or trailer text of len bytes, NUL padding
 * already stripped.  Returns 0, or -1 with c->bad_at and c->why set.
 */
int chkwin_text_check(const char *text, size_t len, int trailer,
		      struct chkwin_text_check *c);

#endif /* CHKWIN_LOGTEXT_H */
