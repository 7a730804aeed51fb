// SPDX-License-Identifier: GPL-2.0
/*
 * The names the log gives to record types, interrupt classes, probes and
 * counters (docs/log-format.md); analysis/chkwinlog.py has the same.
 */
#include <stdio.h>

#include "names.h"

#define REC_NAME(TYPE, name) [CHKWIN_REC_##TYPE] = #name,
static const char *const rec_names[CHKWIN_REC_TYPES] = { CHKWIN_RECORDS(REC_NAME) };

const char *const chkwin_class_names[CHKWIN_CLASSES] = {
	[CHKWIN_CLASS_WINDOW] = "window",
	[CHKWIN_CLASS_CHKSUM] = "chksum",
	[CHKWIN_CLASS_KERNEL] = "kernel",
	[CHKWIN_CLASS_USER] = "user",
	[CHKWIN_CLASS_UNKNOWN] = "unknown",
};

const char *const chkwin_probe_names[CHKWIN_PROBES] = {
	[CHKWIN_PROBE_CHKSUM] = "chksum",
	[CHKWIN_PROBE_VERIFY] = "verify",
	[CHKWIN_PROBE_IGET] = "iget",
	[CHKWIN_PROBE_IRQ] = "irq",
	[CHKWIN_PROBE_SOFTIRQ] = "softirq",
	[CHKWIN_PROBE_BLOCK] = "block",
	[CHKWIN_PROBE_SAMPLE] = "sample",
	[CHKWIN_PROBE_SNAPSHOT] = "snapshot",
};

static const char *const plain_counters[CHKWIN_CNT_IRQ_CLASS] = {
	[CHKWIN_CNT_CHKSUM] = "chksum",
	[CHKWIN_CNT_CHKSUM_WINDOW] = "chksum_window",
	[CHKWIN_CNT_CHKSUM_NESTED] = "chksum_nested",
	[CHKWIN_CNT_VERIFY] = "verify",
	[CHKWIN_CNT_VERIFY_BAD] = "verify_bad",
	[CHKWIN_CNT_IGET] = "iget",
	[CHKWIN_CNT_IGET_BADCRC] = "iget_badcrc",
	[CHKWIN_CNT_IRQ_UNHANDLED] = "irq_unhandled",
	[CHKWIN_CNT_SOFTIRQ] = "softirq",
	[CHKWIN_CNT_BLOCK] = "block",
	[CHKWIN_CNT_SNAPSHOT] = "snapshot",
	[CHKWIN_CNT_EVICTED] = "evicted",
	[CHKWIN_CNT_FROZEN] = "frozen",
	[CHKWIN_CNT_IRQ_PC_STACK] = "irq_pc_stack",
};

const char *chkwin_rec_name(unsigned int type)
{
	return type > 0 && type < CHKWIN_REC_TYPES ? rec_names[type] : NULL;
}

const char *chkwin_counter_name(int i, char *buf, unsigned long len)
{
	if (i < CHKWIN_CNT_IRQ_CLASS)
		return plain_counters[i];
	if (i < CHKWIN_CNT_SAMPLE_CLASS)
		snprintf(buf, len, "irq.%s", chkwin_class_names[i - CHKWIN_CNT_IRQ_CLASS]);
	else if (i < CHKWIN_CNT_LOST)
		snprintf(buf, len, "sample.%s", chkwin_class_names[i - CHKWIN_CNT_SAMPLE_CLASS]);
	else
		snprintf(buf, len, "lost.%s", chkwin_probe_names[i - CHKWIN_CNT_LOST]);
	return buf;
}
