// SPDX-License-Identifier: GPL-2.0
/*
 * The log format as the C side defines it (bpf/chkwin.h and the loader's
 * name tables), printed as JSON for tests/test_logformat.py to hold
 * analysis/chkwinlog.py and docs/log-format.md against.
 */
#include <stddef.h>
#include <stdio.h>

#include "logfile.h"
#include "logtext.h"
#include "names.h"

#define FIELD(member, field) \
	printf("%s[\"%s\", %zu, %zu]", first ? "" : ", ", #field, \
	       offsetof(struct chkwin_rec, member.field) - sizeof(struct chkwin_rec_head), \
	       sizeof(((struct chkwin_rec *)0)->member.field)), first = 0

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
	int first, i;

	for (i = 1; i < CHKWIN_REC_TYPES; i++)
		types[i] = chkwin_rec_name((unsigned int)i);
	printf("{\"rec_size\": %zu, \"head_size\": %zu, \"version\": %d,\n",
	       sizeof(struct chkwin_rec), sizeof(struct chkwin_rec_head), CHKWIN_LOG_VERSION);
	printf("\"max_cpus\": %d, \"max_span\": %u, \"hist_slots\": %d,\n",
	       CHKWIN_MAX_CPUS, CHKWIN_MAX_SPAN, CHKWIN_HIST_SLOTS);
	printf("\"caller_unknown\": %d, \"func_none\": %d,\n", CHKWIN_CALLER_UNKNOWN,
	       CHKWIN_FUNC_NONE);
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
	printf("],\n\"payloads\": {\"chksum\": [");
	first = 1;
	FIELD(chksum, end_ns);
	FIELD(chksum, seed);
	FIELD(chksum, length);
	FIELD(chksum, result);
	FIELD(chksum, dev);
	FIELD(chksum, caller);
	FIELD(chksum, irqs);
	printf("], \"verify\": [");
	first = 1;
	FIELD(verify, ino);
	FIELD(verify, dev);
	FIELD(verify, stored);
	FIELD(verify, computed);
	FIELD(verify, caller);
	FIELD(verify, block);
	printf("], \"iget\": [");
	first = 1;
	FIELD(iget, ino);
	FIELD(iget, dev);
	FIELD(iget, err);
	printf("], \"irq\": [");
	first = 1;
	FIELD(irq, pc);
	FIELD(irq, sp);
	FIELD(irq, end_ns);
	FIELD(irq, irq);
	FIELD(irq, offset);
	FIELD(irq, class);
	FIELD(irq, el);
	FIELD(irq, func);
	FIELD(irq, ipi);
	printf("], \"softirq\": [");
	first = 1;
	FIELD(softirq, end_ns);
	FIELD(softirq, vec);
	printf("], \"block\": [");
	first = 1;
	FIELD(block, sector);
	FIELD(block, nr_sectors);
	FIELD(block, dev);
	FIELD(block, cmd_flags);
	FIELD(block, error);
	printf("], \"sample\": [");
	first = 1;
	FIELD(sample, pc);
	FIELD(sample, sp);
	FIELD(sample, offset);
	FIELD(sample, class);
	FIELD(sample, el);
	FIELD(sample, func);
	printf("], \"snapshot\": [");
	first = 1;
	FIELD(snapshot, call_horizon);
	FIELD(snapshot, arrival_horizon);
	FIELD(snapshot, history);
	FIELD(snapshot, calls);
	FIELD(snapshot, arrivals);
	FIELD(snapshot, blocks);
	FIELD(snapshot, evicted);
	FIELD(snapshot, trigger);
	printf("]}}\n");
	return 0;
}
