// SPDX-License-Identifier: GPL-2.0
/*
 * Which counters a plan feeds: the CHKWIN_NEED_* bits a plan meets,
 * against what bpf/chkwin.h's tables say each counter needs.  Apart from
 * plan.c, which probes the kernel, so that host tests can hold it to
 * analysis/declared.py's reading of the same tables.
 */
#include <string.h>

#include "names.h"
#include "plan.h"

_Static_assert(CHKWIN_NEED_IRQ_PC_KPROBE <= 1 << 30, "the needs fit an int");

#define HOOK_GIVES(NAME, name, probe, help) \
	[HOOK_##NAME] = CHKWIN_NEED_HOOK_##NAME | CHKWIN_NEED_##probe,
/* An attached hook: itself, and the probe it feeds. */
static const unsigned int hook_gives[HOOKS] = { CHKWIN_HOOK_TABLE(HOOK_GIVES) };

#define PROBE_ALONE(NAME, name, alone) [CHKWIN_PROBE_##NAME] = { alone, CHKWIN_NEED_##NAME },
/* A probe no hook feeds: what attaches it, and itself. */
static const struct {
	unsigned int alone, need;
} probes[CHKWIN_PROBES] = { CHKWIN_PROBE_TABLE(PROBE_ALONE) };

/* How readers tell the method from the header: analysis/declared.py. */
const char *const chkwin_irq_pc_modes[] = {
	[IRQ_PC_IRQ_REGS] = "tp_btf+irq_regs",
	[IRQ_PC_KPROBE] = "tp_btf+kprobe+kretprobe:" CHKWIN_IRQ_REGS_FUNC,
	[IRQ_PC_STACK] = "tp_btf+stack",
};

bool chkwin_plan_on(const struct chkwin_plan *p, enum chkwin_hook hook)
{
	const char *m = p->mode[hook];

	return m && strcmp(m, "off") && strcmp(m, "absent") &&
	       strncmp(m, CHKWIN_NOT_ATTACHED, strlen(CHKWIN_NOT_ATTACHED));
}

/* The CHKWIN_NEED_* bits the plan meets. */
static unsigned int plan_needs(const struct chkwin_plan *p)
{
	unsigned int have = p->record == CHKWIN_RECORD_FAILURES ?
		CHKWIN_NEED_FAILURES : CHKWIN_NEED_NOT_FAILURES;
	int i;

	if (p->irq_pc == IRQ_PC_KPROBE)
		have |= CHKWIN_NEED_IRQ_PC_KPROBE;
	for (i = 0; i < HOOKS; i++)
		if (chkwin_plan_on(p, (enum chkwin_hook)i))
			have |= hook_gives[i];
	for (i = 0; i < CHKWIN_PROBES; i++)
		if (probes[i].alone && !(probes[i].alone & ~have))
			have |= probes[i].need;
	return have;
}

bool chkwin_plan_counts(const struct chkwin_plan *p, int counter)
{
	return !(chkwin_counter_needs(counter) & ~plan_needs(p));
}
