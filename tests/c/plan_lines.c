// SPDX-License-Identifier: GPL-2.0
/*
 * What the loader writes about a plan, for every plan the counters can
 * tell apart: each hook attached or not (off, absent and not-attached in
 * turn) as the planner combines them, each record mode, each way to the
 * interrupted pc.  One JSON
 * object a line: the header's mode.HOOK and record lines and the
 * trailer's lost. and count. lines, as header.c writes them, for
 * tests/test_logformat.py to hold analysis/declared.py's reading of
 * bpf/chkwin.h to the loader's.  The first line: the names.
 */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "header.h"
#include "jsonstr.h"
#include "names.h"

static const char *const not_on[] = { "off", "absent", CHKWIN_NOT_ATTACHED " (here)" };

static void names(const char *key, const char *const *n, int count, const char *sep)
{
	int i;

	printf("\"%s\": [", key);
	for (i = 0; i < count; i++) {
		printf("%s", i ? ", " : "");
		json_str(stdout, n[i], strlen(n[i]));
	}
	printf("]%s", sep);
}

/* text's lines that start with one of the prefixes, as JSON strings. */
static void lines(const char *key, const struct text *t, const char *const *prefixes,
		  const char *sep)
{
	const char *line = t->buf, *end;
	int first = 1, i;

	printf("\"%s\": [", key);
	for (; line && *line; line = end + 1) {
		end = strchr(line, '\n');
		for (i = 0; prefixes[i]; i++)
			if (!strncmp(line, prefixes[i], strlen(prefixes[i])))
				break;
		if (!prefixes[i])
			continue;
		printf("%s", first ? "" : ", ");
		json_str(stdout, line, (size_t)(end - line));
		first = 0;
	}
	printf("]%s", sep);
}

static void plan_lines(const struct chkwin_plan *p)
{
	static const char *const header_keys[] = { "mode.", "record=", NULL };
	static const char *const trailer_keys[] = { "lost.", "count.", NULL };
	static const uint64_t written[CHKWIN_REC_TYPES];
	static const struct chkwin_counts counts;
	static const struct chkwin_hist hist;
	struct text header = { 0 }, trailer = { 0 };

	chkwin_plan_text(&header, p);
	text_add(&header, "record=%s\n", chkwin_record_names[p->record]);
	chkwin_trailer_text(&trailer, p, written, &counts, NULL, &hist, 1, "signal");
	printf("{");
	lines("header", &header, header_keys, ", ");
	lines("trailer", &trailer, trailer_keys, "}\n");
	text_free(&header);
	text_free(&trailer);
}

/*
 * The plan of these hooks (a bit each), record mode and way to the
 * interrupted pc; false for one the planner never makes.
 */
static bool make_plan(struct chkwin_plan *p, unsigned int on, int record, int how)
{
	int h;

	/* The planner turns ipi off with irq, and chooses no way without irq. */
	if (!(on & 1u << HOOK_IRQ) && ((on & 1u << HOOK_IPI) || how != IRQ_PC_IRQ_REGS))
		return false;
	memset(p, 0, sizeof(*p));
	p->record = (enum chkwin_record_mode)record;
	for (h = 0; h < HOOKS; h++)
		p->mode[h] = (on & 1u << h) ? "tp_btf" : not_on[(h + on) % 3];
	if (on & 1u << HOOK_IRQ) {
		p->irq_pc = (enum chkwin_irq_pc)how;
		p->mode[HOOK_IRQ] = chkwin_irq_pc_modes[how];
	}
	return true;
}

int main(void)
{
	struct chkwin_plan p;
	unsigned int on;
	int record, how;

	printf("{");
	names("hooks", chkwin_hook_names, HOOKS, ", ");
	names("probes", chkwin_probe_names, CHKWIN_PROBES, ", ");
	names("classes", chkwin_class_names, CHKWIN_CLASSES, "}\n");
	for (on = 0; on < 1u << HOOKS; on++)
		for (record = CHKWIN_RECORD_ALL; record <= CHKWIN_RECORD_COUNTS; record++)
			for (how = IRQ_PC_IRQ_REGS; how <= IRQ_PC_STACK; how++)
				if (make_plan(&p, on, record, how))
					plan_lines(&p);
	return 0;
}
