/* SPDX-License-Identifier: GPL-2.0 */
/* Caller kinds of fallback checksum calls, from the ext4 function on the stack. */
#ifndef CHKWIN_CALLERS_H
#define CHKWIN_CALLERS_H

#include "kallsyms.h"
#include "plan.h"

/* Where BTF has no enum ext4_chksum_caller (stock kernels): the lab patch's names. */
void chkwin_callers_default(struct chkwin_plan *plan);

/*
 * Fill plan->caller_ranges from kallsyms: every ext4 function outside the
 * plan's checksum functions, sorted and merged, each with the caller kind
 * of the helper it is or CHKWIN_CALLER_UNKNOWN.  Needs plan->func and
 * plan->callers.  Returns 0, or -1 with plan->error.
 */
int chkwin_callers_plan(const struct ksyms *ks, struct chkwin_plan *plan);

#endif /* CHKWIN_CALLERS_H */
