// SPDX-License-Identifier: GPL-2.0
/*
 * The names the log gives to record types, interrupt classes, hooks,
 * probes and counters (docs/log-format.md), and what each counter needs,
 * all from bpf/chkwin.h's tables; analysis/declared.py reads the same.
 */
#include <stdio.h>

#include "names.h"

#define REC_NAME(TYPE, name, ring) [CHKWIN_REC_##TYPE] = #name,
static const char *const rec_names[CHKWIN_REC_TYPES] = { CHKWIN_RECORDS(REC_NAME) };

#define CLASS_NAME(NAME, name) [CHKWIN_CLASS_##NAME] = #name,
const char *const chkwin_class_names[CHKWIN_CLASSES] = { CHKWIN_CLASS_TABLE(CLASS_NAME) };

#define PROBE_NAME(NAME, name, alone) [CHKWIN_PROBE_##NAME] = #name,
const char *const chkwin_probe_names[CHKWIN_PROBES] = { CHKWIN_PROBE_TABLE(PROBE_NAME) };
/* lost.PROBE is counted while the probe is attached. */
#define PROBE_NEED(NAME, name, alone) [CHKWIN_PROBE_##NAME] = CHKWIN_NEED_##NAME,
static const unsigned int lost_needs[CHKWIN_PROBES] = { CHKWIN_PROBE_TABLE(PROBE_NEED) };

#define HOOK_NAME(NAME, name, probe, help) [HOOK_##NAME] = #name,
const char *const chkwin_hook_names[HOOKS] = { CHKWIN_HOOK_TABLE(HOOK_NAME) };

const char *const chkwin_record_names[] = {
	[CHKWIN_RECORD_ALL] = "all",
	[CHKWIN_RECORD_FAILURES] = "failures",
	[CHKWIN_RECORD_COUNTS] = "counts",
	NULL,
};

struct counter {
	const char *name;
	unsigned int needs;
};

#define COUNTER(NAME, name, needs) [CHKWIN_CNT_##NAME] = { #name, needs },
static const struct counter plain[] = { CHKWIN_COUNTER_TABLE(COUNTER) };

#define CLASS_COUNT(NAME, name, needs) { #name, needs, CHKWIN_CNT_##NAME },
/* Counters by class, from first (class 0) on. */
static const struct {
	const char *name;
	unsigned int needs;
	int first;
} by_class[] = { CHKWIN_CLASS_COUNTS(CLASS_COUNT) };

_Static_assert(sizeof(plain) / sizeof(plain[0]) == CHKWIN_CNT_IRQ_CLASS,
	       "the class counts follow the plain counters");

/* Counter i's group of CHKWIN_CLASS_COUNTS, or -1. */
static int class_group(int i)
{
	int g;

	for (g = 0; g < (int)(sizeof(by_class) / sizeof(by_class[0])); g++)
		if (i >= by_class[g].first && i < by_class[g].first + CHKWIN_CLASSES)
			return g;
	return -1;
}

const char *chkwin_rec_name(unsigned int type)
{
	return type > 0 && type < CHKWIN_REC_TYPES ? rec_names[type] : NULL;
}

const char *chkwin_counter_name(int i, char *buf, unsigned long len)
{
	int g = class_group(i);

	if (i >= CHKWIN_CNT_LOST)
		snprintf(buf, len, "lost.%s", chkwin_probe_names[i - CHKWIN_CNT_LOST]);
	else if (g >= 0)
		snprintf(buf, len, "%s.%s", by_class[g].name,
			 chkwin_class_names[i - by_class[g].first]);
	else
		return plain[i].name;
	return buf;
}

unsigned int chkwin_counter_needs(int i)
{
	int g = class_group(i);

	if (i >= CHKWIN_CNT_LOST)
		return lost_needs[i - CHKWIN_CNT_LOST];
	return g >= 0 ? by_class[g].needs : plain[i].needs;
}
