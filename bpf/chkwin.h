/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What chkwin.bpf.c and the loader share: the records the BPF programs
 * emit (and the loader writes to the log unchanged), the classes an
 * interrupt arrival falls into, the hooks and probes a run attaches and
 * the per-CPU counters, each declared once in a table below.
 * docs/log-format.md describes the log built from them and points here.
 */
#ifndef CHKWIN_H
#define CHKWIN_H

/* Instruction slots (4 bytes each) per checksum function in the histogram. */
#define CHKWIN_HIST_SLOTS	256
#define CHKWIN_IPI_NAME_LEN	14
#define CHKWIN_COMM_LEN		16
#define CHKWIN_REC_SIZE		64

/*
 * The checksum functions arrivals are placed in: ext4_chksum() (or, in
 * fallback mode, the crc32c shash update it inlines) and the emulated GCC
 * 4.9.4 code of the debug patch.
 */
enum chkwin_func {
	CHKWIN_FUNC_CHKSUM,
	CHKWIN_FUNC_GCC49,
	CHKWIN_FUNCS,
	CHKWIN_FUNC_NONE = 0xff,
};

/*
 * Windows watched by name (chkwin --windows, docs/windows.md): at most
 * CHKWIN_MAX_WATCHED, sorted by first instruction and disjoint, so that an
 * arrival finds its window in CHKWIN_WATCH_STEPS halvings.
 */
#define CHKWIN_MAX_WATCHED	4096
#define CHKWIN_WATCH_STEPS	13	/* > log2(CHKWIN_MAX_WATCHED) */
#define CHKWIN_WATCH_NONE	0xffff
#define CHKWIN_WATCH_NAME_MAX	127
#define CHKWIN_WATCH_NAME_CHARS	\
	"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.+:-"

struct chkwin_watched {
	__u64 first;	/* first and last instruction, both inclusive */
	__u64 last;
};

/*
 * Every record type and its payload, declared once, in the manner of the
 * kernel's TRACE_EVENT.  CHKWIN_RECORDS(R) lists the types in the order of
 * their numbers (from 1), each R(TYPE, name, ring): ring is the flight
 * recorder's ring that keeps it (enum chkwin_ring, CALLS, ARRIVALS or
 * BLOCKS; NONE: none keeps it); CHKWIN_<TYPE>_FIELDS(F, rec)
 * lists a type's fields in their order in the payload, each
 *
 *	F(rec, ctype, name, dims, show, when)
 *
 * ctype and dims declare it ("__u64 pc", "char ipi[14]"); show says how
 * readers print it: DEC and SDEC (unsigned and signed decimal), HEX (a
 * "0x..." string: JSON numbers cannot hold a 64-bit address exactly),
 * CLASS (an enum chkwin_class by name), TYPE (a record type by name), STR
 * (a NUL-padded string), PAD (not printed); when is ALWAYS, or METADATA
 * (only with CHKWIN_F_METADATA).  From this table come the structs below,
 * the loader's field printing, CSV columns, the layout dump, and the
 * record.N lines of the log header (loader/schema.c), from which
 * analysis/chkwinlog.py builds its tables: adding a field is a line here
 * and the BPF code that fills it.
 */
#define CHKWIN_RECORDS(R)						\
	R(CHKSUM, chksum, CALLS)	/* one checksum computation, begin to end */ \
	R(VERIFY, verify, CALLS)	/* a metadata checksum verdict */ \
	R(IGET, iget, CALLS)		/* __ext4_iget() returned */	\
	R(IRQ, irq, ARRIVALS)	/* a hardirq arrival, handler entry to exit */ \
	R(SOFTIRQ, softirq, ARRIVALS)	/* one softirq vector run */	\
	R(BLOCK, block, BLOCKS)	/* a block request issued or completed */ \
	R(SAMPLE, sample, ARRIVALS)	/* a cpu-clock sampler tick */	\
	R(SNAPSHOT, snapshot, NONE)	/* --record failures: a history snapshot follows */ \
	R(RAN, ran, ARRIVALS)	/* what ran on a CPU without its code calling it */

#define CHKWIN_CHKSUM_FIELDS(F, r)					\
	F(r, __u64, end_ns, , DEC, ALWAYS)				\
	F(r, __u32, seed, , DEC, ALWAYS)				\
	F(r, __u32, length, , DEC, ALWAYS)				\
	F(r, __u32, result, , DEC, ALWAYS)				\
	F(r, __u32, dev, , DEC, ALWAYS)					\
	F(r, __u16, caller, , DEC, ALWAYS) /* enum ext4_chksum_caller or UNKNOWN */ \
	F(r, __u16, irqs, , DEC, ALWAYS)   /* arrivals on this CPU meanwhile */ \
	F(r, __u16, window_irqs, , DEC, ALWAYS) /* of them, in a window */

#define CHKWIN_VERIFY_FIELDS(F, r)					\
	F(r, __u64, ino, , DEC, ALWAYS)	/* the inode, or a metadata block's owner (0: none) */ \
	F(r, __u32, dev, , DEC, ALWAYS)					\
	F(r, __u32, stored, , DEC, ALWAYS)				\
	F(r, __u32, computed, , DEC, ALWAYS)				\
	F(r, __u16, caller, , DEC, METADATA) /* enum ext4_chksum_caller */ \
	F(r, __u16, pad, , PAD, ALWAYS)					\
	F(r, __u64, block, , DEC, METADATA) /* block (group for a descriptor) */

#define CHKWIN_IGET_FIELDS(F, r)					\
	F(r, __u64, ino, , DEC, ALWAYS)					\
	F(r, __u32, dev, , DEC, ALWAYS)					\
	F(r, __s32, err, , SDEC, ALWAYS)	/* 0 or -errno; -EFSBADCRC is -EBADMSG */

#define CHKWIN_IRQ_FIELDS(F, r)						\
	F(r, __u64, pc, , HEX, ALWAYS)	/* interrupted instruction, 0 if unknown */ \
	F(r, __u64, sp, , HEX, ALWAYS)	/* interrupted sp, 0 if unknown */ \
	F(r, __u64, end_ns, , DEC, ALWAYS)	/* handler exit */	\
	F(r, __u32, irq, , DEC, ALWAYS)					\
	F(r, __u16, offset, , DEC, ALWAYS)	/* pc - start of func, if func != NONE */ \
	F(r, __u8, class, , CLASS, ALWAYS)				\
	F(r, __u8, el, , DEC, ALWAYS)		/* exception level interrupted */ \
	F(r, __u8, func, , DEC, ALWAYS)		/* enum chkwin_func */	\
	F(r, __u8, pad, , PAD, ALWAYS)					\
	F(r, char, ipi, [CHKWIN_IPI_NAME_LEN], STR, ALWAYS) /* IPI kind, "" for device irqs */

#define CHKWIN_SOFTIRQ_FIELDS(F, r)					\
	F(r, __u64, end_ns, , DEC, ALWAYS)				\
	F(r, __u32, vec, , DEC, ALWAYS)

#define CHKWIN_BLOCK_FIELDS(F, r)					\
	F(r, __u64, sector, , DEC, ALWAYS)				\
	F(r, __u32, nr_sectors, , DEC, ALWAYS)				\
	F(r, __u32, dev, , DEC, ALWAYS)					\
	F(r, __u32, cmd_flags, , DEC, ALWAYS)				\
	F(r, __s32, error, , SDEC, ALWAYS)	/* blk_status_t, completions only */

#define CHKWIN_SAMPLE_FIELDS(F, r)					\
	F(r, __u64, pc, , HEX, ALWAYS)					\
	F(r, __u64, sp, , HEX, ALWAYS)					\
	F(r, __u16, offset, , DEC, ALWAYS)				\
	F(r, __u8, class, , CLASS, ALWAYS)				\
	F(r, __u8, el, , DEC, ALWAYS)					\
	F(r, __u8, func, , DEC, ALWAYS)

/*
 * Emitted before the records of one snapshot (which are ordinary records,
 * each emitted once even when snapshots overlap).  A horizon is the ts of
 * the oldest record still in that ring of the CPU (0: the ring never
 * wrapped): from there on the CPU's history is in the log.
 */
#define CHKWIN_SNAPSHOT_FIELDS(F, r)					\
	F(r, __u64, call_horizon, , DEC, ALWAYS)			\
	F(r, __u64, arrival_horizon, , DEC, ALWAYS)			\
	F(r, __u32, history, , DEC, ALWAYS)	/* K, records per ring */ \
	F(r, __u32, calls, , DEC, ALWAYS)	/* records it emits from each ring */ \
	F(r, __u32, arrivals, , DEC, ALWAYS)				\
	F(r, __u32, blocks, , DEC, ALWAYS)				\
	F(r, __u32, evicted, , DEC, ALWAYS) /* overwritten before a snapshot took them */ \
	F(r, __u8, trigger, , TYPE, ALWAYS)	/* the failing record's type */

/*
 * What ran on a CPU that the code it interrupted or displaced did not
 * call: the identity of each interrupt handler, callback, work item and
 * task switch, so that a failure's computation can be read whole.  Kept
 * in the CPU's arrivals ring (enum chkwin_ring); ts is when it began (an
 * irq handler's: when it returned, its irq record's end_ns).
 */
#define CHKWIN_RAN_FIELDS(F, r)						\
	F(r, __u64, fn, , HEX, ALWAYS)	/* the function that ran, 0: none (switch) */ \
	F(r, __u32, arg, , DEC, ALWAYS)	/* irq: the irq; switch: the next task's pid; ipi_from: the sender's CPU */ \
	F(r, __u8, what, , DEC, ALWAYS)	/* enum chkwin_ran_kind, CHKWIN_RAN_TABLE */ \
	F(r, __u8, pad, [3], PAD, ALWAYS)				\
	/* work, kwork, switch: the task; ipi_from: the IPI's kind (an irq's action is named by the header's irq.N) */ \
	F(r, char, comm, [CHKWIN_COMM_LEN], STR, ALWAYS)

/*
 * The kinds of ran record, each K(NAME, name) in the order of their
 * numbers (the what field), and the tracepoint that reports each.
 */
#define CHKWIN_RAN_TABLE(K)						\
	K(IRQ, irq)		/* irq_handler_exit: the handler that claimed it (ts: its exit, the irq record's end_ns) */ \
	K(HRTIMER, hrtimer)	/* hrtimer_expire_entry: the callback */ \
	K(TIMER, timer)		/* timer_expire_entry: the callback (softirq) */ \
	K(TASKLET, tasklet)	/* tasklet_entry: the function (softirq) */ \
	K(WORK, work)		/* workqueue_execute_start: the work function */ \
	K(SWITCH, switch)	/* sched_switch away from a task with checksum work open */ \
	K(KWORK, kwork)		/* sched_kthread_work_execute_start: a kthread_worker's work function */ \
	/* ipi_raise: an IPI sent to this CPU (the record's cpu); arg: the sender */ \
	K(IPI_FROM, ipi_from)

#define CHKWIN_RAN_ENUM(NAME, name) CHKWIN_RAN_##NAME,
enum chkwin_ran_kind {
	CHKWIN_RAN_TABLE(CHKWIN_RAN_ENUM)
	CHKWIN_RAN_KINDS,
};

#define CHKWIN_REC_ENUM(TYPE, name, ring) CHKWIN_REC_##TYPE,
enum chkwin_rec_type {
	CHKWIN_REC_NONE,
	CHKWIN_RECORDS(CHKWIN_REC_ENUM)
	CHKWIN_REC_TYPES,
};

/*
 * Where an interrupt found the CPU, decided in the kernel: the class
 * field of irq and sample records, each C(NAME, name) in the order of
 * their numbers.
 */
#define CHKWIN_CLASS_TABLE(C)						\
	C(WINDOW, window)	/* inside a watched window (--windows) */ \
	C(CHKSUM, chksum)	/* elsewhere in a checksum function */	\
	C(KERNEL, kernel)	/* elsewhere in the kernel */		\
	C(USER, user)		/* EL0 */				\
	C(UNKNOWN, unknown)	/* no pc: no exception frame on the stack, or no regs kept */

#define CHKWIN_CLASS_ENUM(NAME, name) CHKWIN_CLASS_##NAME,
enum chkwin_class {
	CHKWIN_CLASS_TABLE(CHKWIN_CLASS_ENUM)
	CHKWIN_CLASSES,
};

/*
 * What a run attaches and what it counts, declared once, as the records
 * are: from these tables come the enums below, the log's names (mode.HOOK,
 * lost.PROBE, count.NAME: loader/names.c), the --no-HOOK options
 * (loader/args.c), which counters a plan feeds (loader/needs.c), and the
 * same read by analysis/declared.py.  Adding a hook, probe or counter is
 * a line here and the BPF (and, for a hook, planning) code behind it.
 *
 * CHKWIN_PROBE_TABLE(P): the probes that emit records, each P(NAME, name,
 * alone); lost.name counts the records it had no room for.  A probe is
 * attached while a hook that feeds it is attached or, where alone is not
 * 0, while the plan meets every need in alone.
 */
#define CHKWIN_PROBE_TABLE(P)						\
	P(CHKSUM, chksum, 0)						\
	P(VERIFY, verify, 0)						\
	P(IGET, iget, 0)						\
	P(IRQ, irq, 0)							\
	P(SOFTIRQ, softirq, 0)						\
	P(BLOCK, block, 0)						\
	P(SAMPLE, sample, 0)						\
	P(RAN, ran, 0)							\
	/* history records a snapshot could not send; no hook feeds it */ \
	P(SNAPSHOT, snapshot, CHKWIN_NEED_FAILURES)

/*
 * CHKWIN_HOOK_TABLE(H): what a plan attaches, each H(NAME, name, probe,
 * help): the log's mode.name says how (loader/plan.c decides), the user's
 * --no-name (underscores as dashes) turns it off, with help as its text
 * (NULL: no such option), and it feeds CHKWIN_PROBE_<probe>.
 */
#define CHKWIN_HOOK_TABLE(H)						\
	H(CHKSUM, chksum, CHKSUM, "No checksum call records")		\
	H(VERIFY, verify, VERIFY, "No inode checksum verdicts")	\
	H(VERIFY_META, verify_meta, VERIFY, "No other metadata checksum verdicts") \
	H(IGET, iget, IGET, "No __ext4_iget() results")		\
	H(IRQ, irq, IRQ, "No interrupt arrivals")			\
	/* the IPI kind an irq record carries; planned only with irq */ \
	H(IPI, ipi, IRQ, "No IPI kinds on arrivals")			\
	H(SOFTIRQ, softirq, SOFTIRQ, "No softirq runs")		\
	H(BLOCK, block, BLOCK, "No block requests")			\
	/* the cpu-clock sampler: on with -F */				\
	H(SAMPLE, sample, SAMPLE, NULL)					\
	/* what ran inside the computations (ran records), one hook a tracepoint */ \
	H(HRTIMER, hrtimer, RAN, "No hrtimer callbacks")		\
	H(TIMER, timer, RAN, "No timer callbacks")			\
	H(TASKLET, tasklet, RAN, "No tasklets")				\
	H(WORK, work, RAN, "No workqueue items")			\
	H(SWITCH, switch, RAN, "No task switches")			\
	H(KWORK, kwork, RAN, "No kthread_worker items")		\
	H(IPI_FROM, ipi_from, RAN, "No IPI senders")

/*
 * The ways a plan can attach a hook (loader/plan.c chooses one a hook; its
 * mode.HOOK words it), one bit each, and CHKWIN_PROGRAM_TABLE(P): which
 * BPF program serves which hook in which ways, each P(program, HOOK,
 * ways).  A program is loaded where the plan attaches its hook in one of
 * its ways: the one place a program is chosen (loader/chkwin.c, and
 * analysis/declared.py for the tests).
 */
enum chkwin_way {
	CHKWIN_WAY_TP = 1 << 0,		/* tp_btf on the hook's tracepoints */
	CHKWIN_WAY_TP_COMPLETE = 1 << 1,	/* block: the completions only */
	CHKWIN_WAY_KPROBE = 1 << 2,	/* a kprobe, and a kretprobe if it needs one */
	CHKWIN_WAY_FEXIT = 1 << 3,
	CHKWIN_WAY_IRQ_REGS = 1 << 4,	/* irq: the pc from __irq_regs */
	CHKWIN_WAY_IRQ_KPROBE = 1 << 5,	/* irq: from a kprobe on do_interrupt_handler */
	CHKWIN_WAY_IRQ_STACK = 1 << 6,	/* irq: from the stack */
	CHKWIN_WAY_PERF_EVENT = 1 << 7,
};

#define CHKWIN_PROGRAM_TABLE(P)						\
	P(chksum_begin_tp, CHKSUM, CHKWIN_WAY_TP)			\
	P(chksum_end_tp, CHKSUM, CHKWIN_WAY_TP)				\
	P(chksum_update_entry, CHKSUM, CHKWIN_WAY_KPROBE)		\
	P(chksum_update_return, CHKSUM, CHKWIN_WAY_KPROBE)		\
	P(verify_tp, VERIFY, CHKWIN_WAY_TP)				\
	P(metadata_verify_tp, VERIFY_META, CHKWIN_WAY_TP)		\
	P(iget_fexit, IGET, CHKWIN_WAY_FEXIT)				\
	P(iget_entry, IGET, CHKWIN_WAY_KPROBE)				\
	P(iget_return, IGET, CHKWIN_WAY_KPROBE)				\
	P(irq_regs_kretprobe, IRQ, CHKWIN_WAY_IRQ_KPROBE)		\
	P(irq_regs_kprobe, IRQ, CHKWIN_WAY_IRQ_KPROBE)			\
	P(irq_entry_regs, IRQ, CHKWIN_WAY_IRQ_REGS)			\
	P(irq_entry_saved, IRQ, CHKWIN_WAY_IRQ_KPROBE)			\
	P(irq_entry_stack, IRQ, CHKWIN_WAY_IRQ_STACK)			\
	P(ipi_entry, IPI, CHKWIN_WAY_TP)				\
	P(irq_exit, IRQ, CHKWIN_WAY_IRQ_REGS | CHKWIN_WAY_IRQ_KPROBE |	\
	  CHKWIN_WAY_IRQ_STACK)						\
	P(softirq_entry, SOFTIRQ, CHKWIN_WAY_TP)			\
	P(softirq_exit, SOFTIRQ, CHKWIN_WAY_TP)				\
	P(block_rq_issue, BLOCK, CHKWIN_WAY_TP)				\
	P(block_rq_complete, BLOCK, CHKWIN_WAY_TP | CHKWIN_WAY_TP_COMPLETE) \
	P(hrtimer_entry, HRTIMER, CHKWIN_WAY_TP)			\
	P(timer_entry, TIMER, CHKWIN_WAY_TP)				\
	P(tasklet_entry, TASKLET, CHKWIN_WAY_TP)			\
	P(work_start, WORK, CHKWIN_WAY_TP)				\
	P(switch_away, SWITCH, CHKWIN_WAY_TP)				\
	P(kwork_start, KWORK, CHKWIN_WAY_TP)				\
	P(ipi_raise, IPI_FROM, CHKWIN_WAY_TP)				\
	P(sample, SAMPLE, CHKWIN_WAY_PERF_EVENT)

/*
 * CHKWIN_COUNTER_TABLE(C): the per-CPU counters, each C(NAME, name,
 * needs): count.name in the trailer, where the plan meets every need
 * (CHKWIN_NEED_*, below), else "not-attached": nothing fed it, which is
 * not 0.  Then CHKWIN_CLASS_COUNTS(G): arrivals by class, each G(NAME,
 * name, needs): CHKWIN_CLASSES counters, count.name.CLASS.  Then lost.PROBE
 * for each probe, counted while it is attached.
 */
#define CHKWIN_COUNTER_TABLE(C)						\
	/* checksum computations seen */				\
	C(CHKSUM, chksum, CHKWIN_NEED_CHKSUM)				\
	/* ... that had a window arrival: irq_exit marks the call in flight */ \
	C(CHKSUM_WINDOW, chksum_window, CHKWIN_NEED_CHKSUM | CHKWIN_NEED_IRQ) \
	/* a computation began while one was in flight on the CPU */	\
	C(CHKSUM_NESTED, chksum_nested, CHKWIN_NEED_CHKSUM)		\
	/* checksum verdicts, inode and metadata */			\
	C(VERIFY, verify, CHKWIN_NEED_VERIFY)				\
	/* ... stored != computed */					\
	C(VERIFY_BAD, verify_bad, CHKWIN_NEED_VERIFY)			\
	/* __ext4_iget() returns */					\
	C(IGET, iget, CHKWIN_NEED_IGET)					\
	/* ... -EFSBADCRC */						\
	C(IGET_BADCRC, iget_badcrc, CHKWIN_NEED_IGET)			\
	/* handler returned IRQ_NONE (a shared line enters every handler) */ \
	C(IRQ_UNHANDLED, irq_unhandled, CHKWIN_NEED_IRQ)		\
	/* softirq vector runs */					\
	C(SOFTIRQ, softirq, CHKWIN_NEED_SOFTIRQ)			\
	/* block requests issued and completed; -R failures attaches	\
	 * completions only */						\
	C(BLOCK, block, CHKWIN_NEED_BLOCK | CHKWIN_NEED_NOT_FAILURES)	\
	/* history snapshots sent */					\
	C(SNAPSHOT, snapshot, CHKWIN_NEED_SNAPSHOT)			\
	/* history records a snapshot found overwritten unsent since the \
	 * ring's last snapshot, the blocks ring's included (records never \
	 * followed by a snapshot are not counted) */			\
	C(EVICTED, evicted, CHKWIN_NEED_SNAPSHOT)			\
	/* history pushes dropped because a snapshot was sending the ring: \
	 * records after a failure, which would overwrite what it sends */ \
	C(FROZEN, frozen, CHKWIN_NEED_SNAPSHOT)				\
	/* arrivals whose regs the do_interrupt_handler kprobe did not keep \
	 * (the kernel ran no kprobe program then: inside another one's	\
	 * handler, or while user space read a BPF map): their pc came from \
	 * the stack, their sp is 0 */					\
	C(IRQ_PC_STACK, irq_pc_stack, CHKWIN_NEED_IRQ | CHKWIN_NEED_IRQ_PC_KPROBE) \
	/* interrupt arrivals that were IPIs (ipi_entry gave them their kind) */ \
	C(IPI, ipi, CHKWIN_NEED_HOOK_IPI)				\
	/* what ran: handlers, callbacks, work items, switches (ran records) */ \
	C(RAN, ran, CHKWIN_NEED_RAN)

#define CHKWIN_CLASS_COUNTS(G)						\
	G(IRQ_CLASS, irq, CHKWIN_NEED_IRQ)	/* interrupt arrivals */ \
	G(SAMPLE_CLASS, sample, CHKWIN_NEED_SAMPLE)	/* sampler ticks */

#define CHKWIN_PROBE_ENUM(NAME, name, alone) CHKWIN_PROBE_##NAME,
enum chkwin_probe {
	CHKWIN_PROBE_TABLE(CHKWIN_PROBE_ENUM)
	CHKWIN_PROBES,
};

#define CHKWIN_HOOK_ENUM(NAME, name, probe, help) HOOK_##NAME,
enum chkwin_hook {
	CHKWIN_HOOK_TABLE(CHKWIN_HOOK_ENUM)
	HOOKS,
};

/* What a counter or a probe can need of a plan, one bit each. */
#define CHKWIN_NEED_PROBE_BIT(NAME, name, alone) CHKWIN_NEED_##NAME = 1 << CHKWIN_PROBE_##NAME,
#define CHKWIN_NEED_HOOK_BIT(NAME, name, probe, help) \
	CHKWIN_NEED_HOOK_##NAME = 1 << (CHKWIN_PROBES + HOOK_##NAME),
enum chkwin_need {
	CHKWIN_PROBE_TABLE(CHKWIN_NEED_PROBE_BIT)	/* the probe is attached */
	CHKWIN_HOOK_TABLE(CHKWIN_NEED_HOOK_BIT)	/* the hook is attached */
	CHKWIN_NEED_FAILURES = 1 << (CHKWIN_PROBES + HOOKS),	/* -R failures */
	CHKWIN_NEED_NOT_FAILURES = CHKWIN_NEED_FAILURES << 1,	/* -R all or counts */
	/* the interrupted regs from the do_interrupt_handler kprobe (--irq-pc) */
	CHKWIN_NEED_IRQ_PC_KPROBE = CHKWIN_NEED_FAILURES << 2,
};

/* Indexes into the per-CPU counters array. */
#define CHKWIN_CNT_ENUM(NAME, name, needs) CHKWIN_CNT_##NAME,
#define CHKWIN_CNT_CLASS_ENUM(NAME, name, needs) \
	CHKWIN_CNT_##NAME, CHKWIN_CNT_##NAME##_LAST = CHKWIN_CNT_##NAME + CHKWIN_CLASSES - 1,
enum chkwin_counter {
	CHKWIN_COUNTER_TABLE(CHKWIN_CNT_ENUM)
	CHKWIN_CLASS_COUNTS(CHKWIN_CNT_CLASS_ENUM)
	CHKWIN_CNT_LOST,		/* CHKWIN_PROBES of them, lost.PROBE */
	CHKWIN_COUNTERS = CHKWIN_CNT_LOST + CHKWIN_PROBES,
};

/* The checksum computation running on a CPU, if any (BPF's own). */
struct chkwin_inflight {
	__u64 begin;
	__u64 desc;		/* fallback: the shash_desc being updated */
	__u32 seed;
	__u32 length;
	__u32 dev;
	__u16 caller;
	__u16 irqs;
	__u16 window_irqs;	/* arrivals in a window: the call is window-hit */
	__u8 active;
	__u8 cpu_known;		/* cpu holds this element's CPU */
	__u16 cpu;
	__u32 tid;		/* the task whose call began last */
	/*
	 * The task whose checksum call began here last, until its verdict:
	 * its switches away are recorded (0: none).  One a CPU: a call of
	 * another task here takes the gate over.
	 */
	__u32 open_tid;
};

/*
 * A CPU's one element of the cpu_state map: its counters, and its call in
 * flight beside them, so that the checksum path counts through the element
 * it holds already instead of a second map lookup.  The loader reads the
 * counters.
 */
struct chkwin_cpu_state {
	__u64 counters[CHKWIN_COUNTERS];
	struct chkwin_inflight inflight;
};

/* The histograms: interrupts and sampler ticks by instruction slot. */
enum chkwin_hist_source {
	CHKWIN_HIST_IRQ,
	CHKWIN_HIST_SAMPLE,
	CHKWIN_HIST_SOURCES,
};

#define CHKWIN_HIST_ENTRIES (CHKWIN_HIST_SOURCES * CHKWIN_FUNCS * CHKWIN_HIST_SLOTS)

/*
 * What reaches user space: every record, or (flight recorder) per-CPU
 * history rings that a failure snapshots, or the counters alone.
 */
enum chkwin_record_mode {
	CHKWIN_RECORD_ALL,
	CHKWIN_RECORD_FAILURES,
	CHKWIN_RECORD_COUNTS,
};

/*
 * The flight recorder's rings: per CPU the last K checksum calls and
 * verdicts and the last K of what arrived or ran on it; one ring of the
 * last K block completions shared by all CPUs, since a completion may land
 * on any CPU.  Which record types each keeps: CHKWIN_RECORDS.
 */
enum chkwin_ring {
	CHKWIN_RING_CALLS,
	CHKWIN_RING_ARRIVALS,
	CHKWIN_RING_BLOCKS,
	CHKWIN_RINGS,
	CHKWIN_RING_NONE = CHKWIN_RINGS,	/* a record no ring keeps */
};

#define CHKWIN_HISTORY_MAX	65536
/*
 * Slots each ring has beyond K: interrupts that end while a snapshot is
 * sending push into the arrivals ring it reads, overwriting its oldest
 * slots first; the snapshot reaches back K records only, so up to this
 * many such pushes cannot touch what it has still to send.
 */
#define CHKWIN_HISTORY_SLACK	32

/* chkwin_rec_head.flags */
#define CHKWIN_F_IN_CHKSUM	0x01	/* arrival while a checksum ran here */
#define CHKWIN_F_WINDOW_HIT	0x02	/* checksum call had a window arrival */
#define CHKWIN_F_HANDLED	0x04	/* irq: a handler returned IRQ_HANDLED */
#define CHKWIN_F_COMPLETE	0x08	/* block: completion, not issue */
#define CHKWIN_F_MISMATCH	0x10	/* verify: stored != computed */
#define CHKWIN_F_METADATA	0x20	/* verify: not an inode's; caller, block set */

#define CHKWIN_CALLER_UNKNOWN	0xffff	/* fallback mode cannot tell */
/* Fallback caller kinds: ext4 address ranges the kprobe searches. */
#define CHKWIN_CALLER_RANGES	1024

struct chkwin_rec_head {
	__u8 type;		/* enum chkwin_rec_type */
	__u8 flags;		/* CHKWIN_F_* */
	__u16 cpu;
	__u32 tid;
	__u64 ts;		/* bpf_ktime_get_ns(), CLOCK_MONOTONIC */
};

#define CHKWIN_REC_FIELD(rec, ctype, name, dims, show, when) ctype name dims;
#define CHKWIN_REC_STRUCT(TYPE, name, ring) \
	struct chkwin_##name { CHKWIN_##TYPE##_FIELDS(CHKWIN_REC_FIELD, name) };
CHKWIN_RECORDS(CHKWIN_REC_STRUCT)

#define CHKWIN_REC_MEMBER(TYPE, name, ring) struct chkwin_##name name;
struct chkwin_rec {
	struct chkwin_rec_head h;
	union {
		CHKWIN_RECORDS(CHKWIN_REC_MEMBER)
		__u8 raw[CHKWIN_REC_SIZE - sizeof(struct chkwin_rec_head)];
	};
};

#endif /* CHKWIN_H */
