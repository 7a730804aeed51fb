// SPDX-License-Identifier: GPL-2.0
/*
 * The log format as the C side defines it (bpf/chkwin.h's record table as
 * the compiler lays it out, the record.N lines written from it, the
 * layout of older logs, the name tables), printed as JSON for
 * tests/test_logformat.py to hold analysis/chkwinlog.py and
 * docs/log-format.md against.
 */
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "logfile.h"
#include "logtext.h"
#include "names.h"
#include "schema.h"
#include "strbuf.h"

/* Every payload field of the record table, padding included, as the
 * compiler lays it out. */
#define FIELD(rec, ctype, field, dims, show, when) \
	printf("%s[\"%s\", %zu, %zu]", first ? "" : ", ", #field, \
	       offsetof(struct chkwin_rec, rec.field) - sizeof(struct chkwin_rec_head), \
	       sizeof(((struct chkwin_rec *)0)->rec.field)), first = 0;
#define PAYLOAD(TYPE, name, ring) \
	printf("\"%s\": [", #name); \
	first = 1; \
	CHKWIN_##TYPE##_FIELDS(FIELD, name) \
	printf("], ");

#define HEAD(field) \
	printf("%s[\"%s\", %zu, %zu]", first ? "" : ", ", #field, \
	       offsetof(struct chkwin_rec_head, field), \
	       sizeof(((struct chkwin_rec_head *)0)->field)), first = 0

static void names(const char *key, const char *const *n, int count, int from)
{
	int i;

	printf("\"%s\": [", key);
	for (i = from; i < count; i++)
		printf("%s\"%s\"", i > from ? ", " : "", n[i]);
	printf("],\n");
}

int main(void)
{
	const char *types[CHKWIN_REC_TYPES];
	struct text schema = { 0 };
	char *line, *next;
	int first, i;

	for (i = 1; i < CHKWIN_REC_TYPES; i++)
		types[i] = chkwin_rec_name((unsigned int)i);
	printf("{\"rec_size\": %zu, \"head_size\": %zu, \"version\": %d,\n",
	       sizeof(struct chkwin_rec), sizeof(struct chkwin_rec_head), CHKWIN_LOG_VERSION);
	printf("\"max_cpus\": %d, \"max_span\": %u, \"hist_slots\": %d, \"max_lines\": %d,\n",
	       CHKWIN_MAX_CPUS, CHKWIN_MAX_SPAN, CHKWIN_HIST_SLOTS, CHKWIN_MAX_LINES);
	printf("\"caller_unknown\": %d, \"func_none\": %d,\n", CHKWIN_CALLER_UNKNOWN,
	       CHKWIN_FUNC_NONE);
	printf("\"not_attached\": \"%s\", \"max_watched\": %d,\n", CHKWIN_NOT_ATTACHED,
	       CHKWIN_MAX_WATCHED);
	printf("\"flags\": [%d, %d, %d, %d, %d, %d],\n", CHKWIN_F_IN_CHKSUM,
	       CHKWIN_F_WINDOW_HIT, CHKWIN_F_HANDLED, CHKWIN_F_COMPLETE, CHKWIN_F_MISMATCH,
	       CHKWIN_F_METADATA);
	names("types", types, CHKWIN_REC_TYPES, 1);
	names("classes", chkwin_class_names, CHKWIN_CLASSES, 0);
	names("probes", chkwin_probe_names, CHKWIN_PROBES, 0);
	printf("\"head\": [");
	first = 1;
	HEAD(type);
	HEAD(flags);
	HEAD(cpu);
	HEAD(tid);
	HEAD(ts);
	printf("],\n\"payloads\": {");
	CHKWIN_RECORDS(PAYLOAD)
	printf("\"\": []},\n\"schema\": [");
	chkwin_schema_text(&schema);
	for (line = schema.buf; line && *line; line = next) {
		next = strchr(line, '\n');
		*next++ = '\0';
		printf("\"%s\"%s", line, *next ? ", " : "");
	}
	text_free(&schema);
	printf("],\n\"legacy\": [");
	for (i = 0; i < CHKWIN_REC_SNAPSHOT; i++)
		printf("\"%s\"%s", chkwin_legacy_layout[i], i + 1 < CHKWIN_REC_SNAPSHOT ? ", " : "");
	printf("]}\n");
	return 0;
}
