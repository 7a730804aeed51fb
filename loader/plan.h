/* SPDX-License-Identifier: GPL-2.0 */
/* Feature probing: what this kernel offers, and which program serves each probe. */
#ifndef CHKWIN_PLAN_H
#define CHKWIN_PLAN_H

#include <stdbool.h>
#include <stdint.h>

#include <linux/types.h>

#include "chkwin.h"
#include "opts.h"
#include "windows.h"

#define CHKWIN_MAX_CALLERS 32
/* The kernel function whose first argument is the interrupted context's regs. */
#define CHKWIN_IRQ_REGS_FUNC "do_interrupt_handler"

struct chkwin_plan {
	/* How each probe attaches ("tp_btf", "kprobe+kretprobe", "off"...). */
	const char *mode[HOOKS];
	/* The same as a CHKWIN_WAY_* bit: which programs serve it (0: none). */
	unsigned int way[HOOKS];
	enum chkwin_irq_pc irq_pc;	/* the one chosen (AUTO while irq is off) */
	/*
	 * Fallback: where several symbols are called chksum_update (newer
	 * kernels refuse a kprobe by such a name), crc32c_generic's, attached
	 * by address; 0 when the name is unique.
	 */
	uint64_t chksum_update_addr;
	char chksum_mode[96];
	int rq_issue_arg;
	struct {
		const char *name;
		uint64_t start, end;
	} func[CHKWIN_FUNCS];
	/* --windows: placed and sorted by first address. */
	struct chkwin_windows watched;
	uint64_t el1_irq_start, el1_irq_end, el0_irq_start, el0_irq_end;
	const char *callers[CHKWIN_MAX_CALLERS];
	int ncallers;
	/* Fallback: caller kinds from the stack (callers.c), sorted by start. */
	struct {
		uint64_t start, end;
		uint16_t kind;
	} caller_ranges[CHKWIN_CALLER_RANGES];
	int ncaller_ranges;
	/* "lab": the kernel has the chkwin ext4 tracepoints; "stock": it has not. */
	const char *kernel_kind;
	/* How chksum records get their caller: "tracepoint", "stack" or "none". */
	const char *caller_source;
	enum chkwin_record_mode record;
	char error[200];	/* why the plan cannot be carried out */
};

/*
 * Decide every probe from kallsyms, kernel BTF (vmlinux and the ext4 module)
 * and, for fexit, a real attach attempt.  Returns 0, or -1 with plan->error.
 */
int chkwin_plan_make(const struct chkwin_opts *opts, struct chkwin_plan *plan);
void chkwin_plan_free(struct chkwin_plan *plan);

/* needs.c: */
/* Whether a mode string means something was attached. */
bool chkwin_plan_on(const struct chkwin_plan *plan, enum chkwin_hook hook);
/*
 * Whether counter i (enum chkwin_counter) is fed by something the plan
 * attaches; the trailer says "not-attached" for the others, not 0.
 */
bool chkwin_plan_counts(const struct chkwin_plan *plan, int i);
/* mode.irq, indexed by the way to the interrupted pc the plan chose. */
extern const char *const chkwin_irq_pc_modes[];

#endif /* CHKWIN_PLAN_H */
