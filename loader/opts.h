/* SPDX-License-Identifier: GPL-2.0 */
/* What the command line asks for (parsed in args.c). */
#ifndef CHKWIN_OPTS_H
#define CHKWIN_OPTS_H

#include <stdbool.h>

#include <linux/types.h>

#include "chkwin.h"

enum chkwin_attach_mode {
	ATTACH_AUTO,		/* tracepoints where present, else fallbacks */
	ATTACH_TRACEPOINT,	/* the lab tracepoints or nothing */
	ATTACH_FALLBACK,	/* kprobes as on a stock kernel */
};

/* --irq-pc: where an interrupt's interrupted pc, sp and pstate come from. */
enum chkwin_irq_pc {
	IRQ_PC_AUTO,		/* the first of the others this kernel allows */
	IRQ_PC_IRQ_REGS,	/* __irq_regs (kallsyms must have it) */
	IRQ_PC_KPROBE,		/* a kprobe on do_interrupt_handler(regs, handler) */
	IRQ_PC_STACK,		/* the frame after the irq vector; pc only */
};

enum chkwin_format {
	FORMAT_TEXT,
	FORMAT_JSON,
	FORMAT_CSV,
};

struct chkwin_opts {
	double interval;	/* seconds between summaries */
	long count;		/* summaries before exiting, 0: unlimited */
	double duration;	/* seconds, 0: until a signal or count */
	const char *output;	/* binary log, or NULL */
	const char *read_path;	/* --read: decode this log and exit */
	const char *windows;	/* --windows FILE, or NULL: no window watched */
	enum chkwin_format format;
	int cpu;		/* -1: all */
	long sample_hz;		/* 0: no sampler */
	bool off[HOOKS];	/* turned off by the user (bpf/chkwin.h's hook table) */
	enum chkwin_attach_mode mode;
	enum chkwin_irq_pc irq_pc;
	enum chkwin_record_mode record;
	long history;		/* failures mode: K, records per history ring */
	long wakeup_kb;		/* 0: wake user space per record */
	bool floor;		/* bench: programs attach and return at once */
	bool prog_stats;	/* closing record: runs and run time per program */
	bool snapshot_window;	/* --snapshot-on window: window arrivals snapshot too */
	long ringbuf_mb;
	bool dry_run;
	bool verbose;
	bool quiet;		/* no live summary */
	const char *kallsyms;
};

/* Fills opts from argv; on bad usage says why in its first line on stderr and exits 2. */
void chkwin_parse_args(int argc, char **argv, struct chkwin_opts *opts);

#endif /* CHKWIN_OPTS_H */
