/* SPDX-License-Identifier: GPL-2.0 */
/* The chkwin event log (docs/log-format.md): a streaming writer and a reader. */
#ifndef CHKWIN_LOGFILE_H
#define CHKWIN_LOGFILE_H

#include <stddef.h>
#include <stdint.h>
#include <linux/types.h>

#include "chkwin.h"
#include "schema.h"

#define CHKWIN_LOG_MAGIC	"CHKWLOG"	/* plus its NUL: 8 bytes */
#define CHKWIN_LOG_VERSION	4	/* written; versions 1-3 still read */
#define CHKWIN_CHUNK_RECS	1024

struct chkwin_log_writer {
	int fd;
	const char *path;
	uint32_t seq;			/* chunks written so far */
	uint32_t chain;			/* CRC of the header and every block so far */
	uint32_t pending;		/* records buffered in chunk */
	struct chkwin_rec chunk[CHKWIN_CHUNK_RECS];
	uint8_t out[16 + CHKWIN_CHUNK_RECS * CHKWIN_REC_SIZE];	/* head + chunk */
};

/*
 * All return 0 or a negative errno, having printed one line naming the
 * file.  An existing regular file is never overwritten.
 */
int chkwin_log_create(struct chkwin_log_writer *w, const char *path);
int chkwin_log_header(struct chkwin_log_writer *w, const char *text);
int chkwin_log_add(struct chkwin_log_writer *w, const struct chkwin_rec *rec);
int chkwin_log_flush(struct chkwin_log_writer *w);
int chkwin_log_trailer(struct chkwin_log_writer *w, const char *text);
int chkwin_log_close(struct chkwin_log_writer *w);


enum chkwin_log_status {
	CHKWIN_LOG_COMPLETE,
	CHKWIN_LOG_TRUNCATED,
	CHKWIN_LOG_CORRUPT,
};

struct chkwin_log_view {
	const char *header;		/* header text, NUL padding stripped */
	size_t header_len;
	const char *trailer;		/* NULL when there is none */
	size_t trailer_len;
	unsigned int cpus;		/* from the header, 0 if absent */
	unsigned int version;
	struct chkwin_schema schema;	/* the record layout: the header's, or legacy */
	uint64_t records;
	uint64_t by_type[CHKWIN_MAX_TYPES];
	enum chkwin_log_status status;
	uint64_t offset;		/* truncated: file size; corrupt: damage */
	char reason[160];
};

/* Called for each record in file order; a nonzero return stops reading. */
typedef int (*chkwin_rec_fn)(const struct chkwin_rec *rec, uint64_t offset,
			     void *ctx);

/*
 * Walk a whole log held in memory.  Returns 0 when the log could be read
 * (complete or truncated, see view->status) and -1 when it is corrupt or
 * not a chkwin log; view->reason says why in either case.
 */
int chkwin_log_parse(const uint8_t *data, size_t size,
		     struct chkwin_log_view *view, chkwin_rec_fn fn, void *ctx);

/* The value of key in key=value text, or NULL; *len gets its length. */
const char *chkwin_log_value(const char *text, size_t text_len,
			     const char *key, size_t *len);

#endif /* CHKWIN_LOGFILE_H */
