// SPDX-License-Identifier: GPL-2.0
/*
 * chkwin.bpf.c: where interrupts land relative to ext4 checksum work.
 *
 * Checksum calls are bracketed per CPU (lab tracepoints, or kprobes on the
 * crc32c shash update on kernels without them); every hardirq arrival is
 * classified in the kernel by the instruction it interrupted; inode
 * verdicts, iget results, softirqs and block requests give the context.
 * Counters and histograms stay in per-CPU maps so that a long run is cheap.
 * Records go through one ring buffer (--record all), or into history rings
 * of which a checksum failure sends a snapshot (--record failures, the
 * flight recorder); every record that cannot be sent is counted.
 * The loader picks one program per probe (see loader/plan.c) and turns
 * the others off before load.
 *
 * This file holds the programs; what several share is in pieces of their
 * own, as libbpf-tools shares helpers: record.bpf.h (counters, ring
 * buffer), flight.bpf.h (history rings, snapshots, where a record goes),
 * windows.bpf.h (windows watched by name), classify.bpf.h (the class of
 * an interrupted pc) and callers.bpf.h (fallback mode's caller search).
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "chkwin.h"
#include "record.bpf.h"
#include "flight.bpf.h"
#include "windows.bpf.h"
#include "classify.bpf.h"
#include "callers.bpf.h"

#define IRQ_NONE_RET	0
#define MAX_ERRNO	4095
#define EBADMSG		74	/* ext4: EFSBADCRC */
#define STACK_DEPTH	32	/* 16 frames missed the pc on the fasteoi irq path */
#define NR_SOFTIRQS_MAX	16

/* Settings, filled in by the loader between open and load. */
const volatile __u64 el1_irq_start;	/* stack fallback: exception vectors */
const volatile __u64 el1_irq_end;
const volatile __u64 el0_irq_start;
const volatile __u64 el0_irq_end;
const volatile int rq_issue_arg;	/* block_rq_issue: (q, rq) before 5.11 */

/* arm64's pt_regs ends its user part with sp, pc, pstate: one read. */
struct sp_pc_pstate {
	__u64 sp, pc, pstate;
};

/* The hardirq arrival being handled on this CPU, entry to exit. */
struct arrival {
	__u64 ts;
	__u64 pc;
	__u64 sp;
	__u32 irq;
	__u16 offset;
	__u16 watch;		/* index into watched, or CHKWIN_WATCH_NONE */
	__u8 class;
	__u8 el;
	__u8 func;
	__u8 active;
	__u8 in_chksum;
	/* kprobe+kretprobe:do_interrupt_handler: the exception's, while it lasts. */
	__u8 saved_fresh;
	__u8 regs_missed;	/* the kprobe missed this arrival: pc from the stack */
	char ipi[CHKWIN_IPI_NAME_LEN];
	struct sp_pc_pstate saved;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct arrival);
} arrivals SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64[STACK_DEPTH]);
} stacks SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, NR_SOFTIRQS_MAX);
	__type(key, __u32);
	__type(value, __u64);
} softirq_begin SEC(".maps");

struct iget_args {
	__u64 ino;
	__u32 dev;
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32);
	__type(value, struct iget_args);
} iget_calls SEC(".maps");

/* Checksum brackets, shared by the tracepoint and the fallback programs. */

/* This element's CPU, asked once: a per-CPU element never moves. */
static __always_inline __u32 inflight_cpu(struct chkwin_inflight *f)
{
	if (!f->cpu_known) {
		f->cpu = bpf_get_smp_processor_id();
		f->cpu_known = 1;
	}
	return f->cpu;
}

static __always_inline void chksum_begin(__u32 dev, __u16 caller, __u32 seed,
					 __u32 length, __u64 desc)
{
	struct chkwin_cpu_state *s = this_cpu_state();
	struct chkwin_inflight *f;

	if (!s)
		return;
	f = &s->inflight;
	if (f->active)
		count_in(s, CHKWIN_CNT_CHKSUM_NESTED);
	f->begin = bpf_ktime_get_ns();
	f->desc = desc;
	f->seed = seed;
	f->length = length;
	f->dev = dev;
	f->caller = caller;
	f->irqs = 0;
	f->window_irqs = 0;
	f->active = 1;
	f->tid = (__u32)bpf_get_current_pid_tgid();
	f->open_tid = f->tid;
}

static __always_inline void fill_chksum(struct chkwin_rec *r, const struct chkwin_inflight *f,
					__u32 result)
{
	r->h.flags = f->window_irqs ? CHKWIN_F_WINDOW_HIT : 0;
	r->chksum.end_ns = bpf_ktime_get_ns();
	r->chksum.seed = f->seed;
	r->chksum.length = f->length;
	r->chksum.result = result;
	r->chksum.dev = f->dev;
	r->chksum.caller = f->caller;
	r->chksum.irqs = f->irqs;
	r->chksum.window_irqs = f->window_irqs;
}

static __always_inline void chksum_end(__u32 result)
{
	struct chkwin_cpu_state *s = this_cpu_state();
	struct chkwin_inflight *f;

	if (!s || !s->inflight.active)
		return;
	f = &s->inflight;
	f->active = 0;
	count_in(s, CHKWIN_CNT_CHKSUM);
	if (f->window_irqs)
		count_in(s, CHKWIN_CNT_CHKSUM_WINDOW);
	rec_write_by(CHKWIN_REC_CHKSUM, f->begin, inflight_cpu(f), f->tid, CHKWIN_PROBE_CHKSUM,
		     fill_chksum, f, result);
}

SEC("tp_btf/ext4_chksum_begin")
int BPF_PROG(chksum_begin_tp, struct super_block *sb, int caller, u32 seed,
	     unsigned int length)
{
	if (wanted())
		chksum_begin(sb->s_dev, caller, seed, length, 0);
	return 0;
}

SEC("tp_btf/ext4_chksum_end")
int BPF_PROG(chksum_end_tp, struct super_block *sb, int caller, u32 seed,
	     unsigned int length, u32 result)
{
	if (wanted())
		chksum_end(result);
	return 0;
}

/* Fallback: crc32c's shash update keeps the running CRC in the desc. */
static __always_inline __u32 shash_crc(struct shash_desc *desc)
{
	__u32 crc = 0;

	bpf_probe_read_kernel(&crc, sizeof(crc), (void *)desc +
			      bpf_core_field_offset(struct shash_desc, __ctx));
	return crc;
}


SEC("kprobe/chksum_update")
int BPF_KPROBE(chksum_update_entry, struct shash_desc *desc, const u8 *data,
	       unsigned int length)
{
	if (wanted())
		chksum_begin(0, stack_caller(ctx), shash_crc(desc), length,
			     (__u64)desc);
	return 0;
}

SEC("kretprobe/chksum_update")
int BPF_KRETPROBE(chksum_update_return)
{
	struct chkwin_cpu_state *s;

	if (!wanted())
		return 0;
	s = this_cpu_state();
	if (s && s->inflight.active)
		chksum_end(shash_crc((struct shash_desc *)s->inflight.desc));
	return 0;
}

static __always_inline void fill_verify(struct chkwin_rec *r, __u8 flags, __u64 ino,
					__u32 dev, __u32 stored, __u32 computed,
					__u16 caller, __u64 block)
{
	r->h.flags = flags | (stored != computed ? CHKWIN_F_MISMATCH : 0);
	r->verify.ino = ino;
	r->verify.dev = dev;
	r->verify.stored = stored;
	r->verify.computed = computed;
	r->verify.caller = caller;
	r->verify.block = block;
}

/*
 * A task's verdict ends the computation that fed it: no more of its
 * switches.  Returns this CPU.
 */
static __always_inline __u32 close_computation(struct chkwin_cpu_state *s, __u32 tid)
{
	if (!s)
		return bpf_get_smp_processor_id();
	if (s->inflight.open_tid == tid)
		s->inflight.open_tid = 0;
	return inflight_cpu(&s->inflight);
}

/* One verdict: counted, then recorded (caller and block with F_METADATA). */
static __always_inline void verdict(__u64 ino, __u32 dev, __u32 stored, __u32 computed,
				    __u8 flags, __u16 caller, __u64 block)
{
	struct chkwin_cpu_state *s = this_cpu_state();
	__u64 ts = bpf_ktime_get_ns();
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	__u32 cpu = close_computation(s, tid);

	count_in(s, CHKWIN_CNT_VERIFY);
	if (stored != computed)
		count_in(s, CHKWIN_CNT_VERIFY_BAD);
	rec_write_by(CHKWIN_REC_VERIFY, ts, cpu, tid, CHKWIN_PROBE_VERIFY,
		     fill_verify, flags, ino, dev, stored, computed, caller, block);
	if (stored != computed)
		snapshot(CHKWIN_REC_VERIFY, ts);
}

SEC("tp_btf/ext4_inode_csum_verify")
int BPF_PROG(verify_tp, struct inode *inode, u32 stored, u32 computed)
{
	if (!wanted())
		return 0;
	verdict(inode->i_ino, inode->i_sb->s_dev, stored,
		computed, 0, 0, 0);
	return 0;
}

/* Every other metadata verdict (directory, extent, bitmap, ...). */
SEC("tp_btf/ext4_metadata_csum_verify")
int BPF_PROG(metadata_verify_tp, struct super_block *sb, int caller, unsigned long ino,
	     u64 block, u32 stored, u32 computed)
{
	if (!wanted())
		return 0;
	verdict(ino, sb->s_dev, stored, computed, CHKWIN_F_METADATA, caller,
		block);
	return 0;
}

static __always_inline void fill_iget(struct chkwin_rec *r, __u64 ino, __u32 dev, __s64 err)
{
	r->iget.ino = ino;
	r->iget.dev = dev;
	r->iget.err = (__s32)err;
}

/* ret is __ext4_iget()'s return value as a number: an inode or an ERR_PTR. */
static __always_inline void iget_done(__u64 ino, __u32 dev, __u64 ret)
{
	__s64 err = ret >= (__u64)-MAX_ERRNO ? (__s64)ret : 0;
	struct chkwin_cpu_state *s = this_cpu_state();
	__u64 ts = bpf_ktime_get_ns();
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	__u32 cpu = close_computation(s, tid);

	count_in(s, CHKWIN_CNT_IGET);
	if (err == -EBADMSG)
		count_in(s, CHKWIN_CNT_IGET_BADCRC);
	rec_write_by(CHKWIN_REC_IGET, ts, cpu, tid, CHKWIN_PROBE_IGET,
		     fill_iget, ino, dev, err);
	if (err == -EBADMSG)
		snapshot(CHKWIN_REC_IGET, ts);
}

/*
 * The return value through bpf_get_func_ret(): as a typed argument it is a
 * pointer, and the verifier refuses to store its low half in a record on
 * the stack.
 */
SEC("fexit/__ext4_iget")
int BPF_PROG(iget_fexit, struct super_block *sb, unsigned long ino)
{
	__u64 ret;

	if (wanted() && !bpf_get_func_ret(ctx, &ret))
		iget_done(ino, sb->s_dev, ret);
	return 0;
}

SEC("kprobe/__ext4_iget")
int BPF_KPROBE(iget_entry, struct super_block *sb, unsigned long ino)
{
	struct iget_args args = { .ino = ino };
	__u32 tid;

	if (floor_only)
		return 0;
	tid = (__u32)bpf_get_current_pid_tgid();
	args.dev = BPF_CORE_READ(sb, s_dev);
	/* A full table would lose this call's result: count it as lost. */
	if (bpf_map_update_elem(&iget_calls, &tid, &args, BPF_ANY))
		count(CHKWIN_CNT_LOST + CHKWIN_PROBE_IGET);
	return 0;
}

SEC("kretprobe/__ext4_iget")
int BPF_KRETPROBE(iget_return, struct inode *ret)
{
	struct iget_args *args;
	__u32 tid;

	if (floor_only)
		return 0;
	tid = (__u32)bpf_get_current_pid_tgid();
	args = bpf_map_lookup_elem(&iget_calls, &tid);
	if (!args)
		return 0;
	if (wanted())
		iget_done(args->ino, args->dev, (__u64)ret);
	bpf_map_delete_elem(&iget_calls, &tid);
	return 0;
}

/* Hardirq arrivals: entry records where, exit decides whether to count. */

static __always_inline void arrival_start(int irq, __u64 pc, __u64 sp, __u8 el,
					  bool known)
{
	struct arrival *a = bpf_map_lookup_elem(&arrivals, &zero);
	struct chkwin_cpu_state *s = this_cpu_state();
	struct place p = classify(pc, el);

	if (!a)
		return;
	if (!known)
		p.class = CHKWIN_CLASS_UNKNOWN;
	a->ts = bpf_ktime_get_ns();
	a->pc = pc;
	a->sp = sp;
	a->irq = irq;
	a->el = el;
	a->class = p.class;
	a->func = p.func;
	a->offset = p.offset;
	a->watch = known ? p.watch : CHKWIN_WATCH_NONE;
	a->in_chksum = s && s->inflight.active;
	/* Whole field: the record copies it, and the format says NUL-padded. */
	__builtin_memset(a->ipi, 0, sizeof(a->ipi));
	a->regs_missed = 0;
	a->active = 1;
}

/*
 * Without __irq_regs in kallsyms (Debian's 6.1): arm64's entry code hands
 * the exception's saved registers to do_interrupt_handler(), which runs
 * every handler of the exception (GICv2 takes several interrupts in one)
 * with interrupts masked.  The regs are kept on this CPU from its entry to
 * its return; an arrival whose kprobe did not run (one inside another
 * kprobe's handler is skipped) takes its pc from the stack, never another
 * arrival's regs.  Programs attach in the object's order (by section) and
 * detach in reverse, so these come before every irq_handler_entry
 * program, the kretprobe first: no regs are kept while nothing would end
 * them, nor read while the kprobe is not there to renew them.  Pseudo-NMIs
 * (off by default) could interleave two exceptions' regs.
 */
SEC("kretprobe/do_interrupt_handler")
int BPF_KRETPROBE(irq_regs_kretprobe)
{
	struct arrival *a;

	if (!wanted())
		return 0;
	a = bpf_map_lookup_elem(&arrivals, &zero);
	if (a)
		a->saved_fresh = 0;
	return 0;
}

SEC("kprobe/do_interrupt_handler")
int BPF_KPROBE(irq_regs_kprobe, struct pt_regs *regs)
{
	struct arrival *a;

	if (!wanted())
		return 0;
	a = bpf_map_lookup_elem(&arrivals, &zero);
	if (!a)
		return 0;
	a->saved_fresh = !bpf_probe_read_kernel(&a->saved, sizeof(a->saved),
						__builtin_preserve_access_index(&regs->sp));
	return 0;
}

/* Weak: kernels without KALLSYMS_ALL lack it and load another irq entry instead. */
extern struct pt_regs *__irq_regs __ksym __weak;

SEC("tp_btf/irq_handler_entry")
int BPF_PROG(irq_entry_regs, int irq, struct irqaction *action)
{
	struct pt_regs **slot, *regs;
	struct sp_pc_pstate at;

	if (!wanted())
		return 0;
	slot = bpf_this_cpu_ptr(&__irq_regs);
	regs = *slot;
	/* The slot holds a plain address: its fields need a probe read. */
	if (!regs || bpf_probe_read_kernel(&at, sizeof(at),
					   __builtin_preserve_access_index(&regs->sp))) {
		arrival_start(irq, 0, 0, 1, false);
		return 0;
	}
	arrival_start(irq, at.pc, at.sp, (at.pstate >> 2) & 3, true);
	return 0;
}

/*
 * The stack's way: the frame after the EL1 irq vector in the kernel stack
 * is the interrupted pc (the entry code's frame record holds it, so even a
 * frameless leaf is its own); a stack that ends in the EL0 vector came
 * from user space.  No sp, no pstate.
 */
static __always_inline void arrival_from_stack(void *ctx, int irq)
{
	__u64 *ips, pc = 0;
	long n;
	int i;

	ips = bpf_map_lookup_elem(&stacks, &zero);
	if (!ips)
		return;
	n = bpf_get_stack(ctx, ips, STACK_DEPTH * sizeof(__u64), 0);
	if (n <= 0) {
		arrival_start(irq, 0, 0, 1, false);
		return;
	}
	n /= sizeof(__u64);
	for (i = 0; i < STACK_DEPTH; i++) {
		if (i >= n)
			break;
		if (ips[i] >= el0_irq_start && ips[i] < el0_irq_end) {
			arrival_start(irq, 0, 0, 0, true);
			return;
		}
		if (ips[i] >= el1_irq_start && ips[i] < el1_irq_end &&
		    i + 1 < n && i + 1 < STACK_DEPTH) {
			pc = ips[i + 1];
			break;
		}
	}
	arrival_start(irq, pc, 0, 1, pc != 0);
}

/* Where the kprobe was skipped, the stack still knows the pc. */
SEC("tp_btf/irq_handler_entry")
int BPF_PROG(irq_entry_saved, int irq, struct irqaction *action)
{
	struct arrival *a;
	struct sp_pc_pstate at;

	if (!wanted())
		return 0;
	a = bpf_map_lookup_elem(&arrivals, &zero);
	if (!a)
		return 0;
	if (!a->saved_fresh) {
		arrival_from_stack(ctx, irq);
		a->regs_missed = 1;
		return 0;
	}
	at = a->saved;
	arrival_start(irq, at.pc, at.sp, (at.pstate >> 2) & 3, true);
	return 0;
}

/* Without either (no kprobes). */
SEC("tp_btf/irq_handler_entry")
int BPF_PROG(irq_entry_stack, int irq, struct irqaction *action)
{
	if (wanted())
		arrival_from_stack(ctx, irq);
	return 0;
}

SEC("tp_btf/ipi_entry")
int BPF_PROG(ipi_entry, const char *reason)
{
	struct arrival *a;

	if (floor_only)
		return 0;
	a = bpf_map_lookup_elem(&arrivals, &zero);
	if (a && a->active) {
		bpf_probe_read_kernel_str(a->ipi, sizeof(a->ipi), reason);
		count(CHKWIN_CNT_IPI);
	}
	return 0;
}

static __always_inline void fill_irq(struct chkwin_rec *r, const struct arrival *a, int irq,
				     __u64 end)
{
	r->h.flags = CHKWIN_F_HANDLED | (a->in_chksum ? CHKWIN_F_IN_CHKSUM : 0);
	r->irq.end_ns = end;
	r->irq.pc = a->pc;
	r->irq.sp = a->sp;
	r->irq.irq = irq;
	r->irq.offset = a->offset;
	r->irq.class = a->class;
	r->irq.el = a->el;
	r->irq.func = a->func;
	__builtin_memcpy(r->irq.ipi, a->ipi, sizeof(r->irq.ipi));
}

static __always_inline void fill_ran(struct chkwin_rec *r, __u8 what, __u64 fn, __u32 arg)
{
	r->ran.what = what;
	r->ran.fn = fn;
	r->ran.arg = arg;
}


SEC("tp_btf/irq_handler_exit")
int BPF_PROG(irq_exit, int irq, struct irqaction *action, int ret)
{
	struct chkwin_cpu_state *s;
	struct chkwin_inflight *f;
	struct arrival *a;
	struct place p;
	__u32 cpu, tid;
	__u64 end;

	if (floor_only)
		return 0;
	a = bpf_map_lookup_elem(&arrivals, &zero);
	s = this_cpu_state();
	if (!a || !a->active || a->irq != irq || !s)
		return 0;
	f = &s->inflight;
	/* A shared line runs every handler: count the one that claimed it. */
	if (ret == IRQ_NONE_RET) {
		count_in(s, CHKWIN_CNT_IRQ_UNHANDLED);
		return 0;
	}
	a->active = 0;
	p.class = a->class;
	p.func = a->func;
	p.offset = a->offset;
	p.watch = a->watch;
	count_in(s, CHKWIN_CNT_IRQ_CLASS +
		 (a->class < CHKWIN_CLASSES ? a->class : CHKWIN_CLASS_UNKNOWN));
	/* Here, not at entry: a shared line's every handler enters. */
	if (a->regs_missed)
		count_in(s, CHKWIN_CNT_IRQ_PC_STACK);
	count_watched(0, a->watch);
	hist_add(CHKWIN_HIST_IRQ, p);
	if (a->in_chksum && f->active) {
		f->irqs++;
		if (a->class == CHKWIN_CLASS_WINDOW)
			f->window_irqs++;
	}
	end = bpf_ktime_get_ns();
	/* Asked once for the two records, and not at all where none is kept. */
	cpu = inflight_cpu(f);
	tid = record_mode == CHKWIN_RECORD_COUNTS ? 0 : (__u32)bpf_get_current_pid_tgid();
	rec_write_by(CHKWIN_REC_IRQ, a->ts, cpu, tid, CHKWIN_PROBE_IRQ,
		     fill_irq, a, irq, end);
	/*
	 * Which handler it was, which the irq number alone does not say; its
	 * ts is the irq record's end_ns, so the two pair up.
	 */
	rec_write_by(CHKWIN_REC_RAN, end, cpu, tid, CHKWIN_PROBE_IRQ,
		     fill_ran, CHKWIN_RAN_IRQ, (__u64)action->handler, irq);
	/* Where no checksum can fail, the history around the arrival itself. */
	if (snapshot_on_window && a->class == CHKWIN_CLASS_WINDOW)
		snapshot(CHKWIN_REC_IRQ, a->ts);
	return 0;
}

SEC("tp_btf/softirq_entry")
int BPF_PROG(softirq_entry, unsigned int vec)
{
	__u64 *begin;

	if (!wanted())
		return 0;
	begin = bpf_map_lookup_elem(&softirq_begin, &vec);
	if (begin)
		*begin = bpf_ktime_get_ns();
	return 0;
}

static __always_inline void fill_softirq(struct chkwin_rec *r, unsigned int vec)
{
	r->softirq.end_ns = bpf_ktime_get_ns();
	r->softirq.vec = vec;
}

SEC("tp_btf/softirq_exit")
int BPF_PROG(softirq_exit, unsigned int vec)
{
	__u64 *begin;

	if (!wanted())
		return 0;
	begin = bpf_map_lookup_elem(&softirq_begin, &vec);
	if (!begin || !*begin)
		return 0;
	count(CHKWIN_CNT_SOFTIRQ);
	rec_write(CHKWIN_REC_SOFTIRQ, *begin, CHKWIN_PROBE_SOFTIRQ,
		  fill_softirq, vec);
	*begin = 0;
	return 0;
}

static __always_inline void fill_block(struct chkwin_rec *r, struct request *rq,
				       bool complete, int error)
{
	struct gendisk *disk = BPF_CORE_READ(rq, q, disk);

	r->h.flags = complete ? CHKWIN_F_COMPLETE : 0;
	r->block.sector = BPF_CORE_READ(rq, __sector);
	r->block.nr_sectors = BPF_CORE_READ(rq, __data_len) >> 9;
	r->block.cmd_flags = BPF_CORE_READ(rq, cmd_flags);
	if (disk)
		r->block.dev = ((__u32)BPF_CORE_READ(disk, major) << 20) |
			       BPF_CORE_READ(disk, first_minor);
	r->block.error = error;
}

/*
 * Block requests: -R failures attaches completions only (they explain a
 * read) and keeps them; it counts none, as it sees no issue.
 */
static __always_inline void block_event(struct request *rq, bool complete, int error)
{
	if (record_mode != CHKWIN_RECORD_FAILURES)
		count(CHKWIN_CNT_BLOCK);
	rec_write(CHKWIN_REC_BLOCK, bpf_ktime_get_ns(), CHKWIN_PROBE_BLOCK,
		  fill_block, rq, complete, error);
}

SEC("tp_btf/block_rq_issue")
int block_rq_issue(u64 *ctx)
{
	if (!wanted())
		return 0;
	/* The loader read the tracepoint's arity from BTF. */
	if (rq_issue_arg == 1)
		block_event((struct request *)ctx[1], false, 0);
	else
		block_event((struct request *)ctx[0], false, 0);
	return 0;
}

SEC("tp_btf/block_rq_complete")
int BPF_PROG(block_rq_complete, struct request *rq, int error, unsigned int nr_bytes)
{
	if (wanted())
		block_event(rq, true, error);
	return 0;
}

/*
 * What ran on this CPU without the code it displaced calling it: callbacks,
 * tasklets, work items, and switches away from the task whose checksum
 * work is open on this CPU.  Recorded when they begin; the span they fall in is the
 * analysis's business.
 */
static __always_inline void ran_fn(__u8 what, __u64 fn)
{
	count(CHKWIN_CNT_RAN);
	rec_write(CHKWIN_REC_RAN, bpf_ktime_get_ns(), CHKWIN_PROBE_RAN,
		  fill_ran, what, fn, 0);
}

SEC("tp_btf/hrtimer_expire_entry")
int BPF_PROG(hrtimer_entry, struct hrtimer *timer)
{
	if (wanted())
		ran_fn(CHKWIN_RAN_HRTIMER, (__u64)timer->function);
	return 0;
}

SEC("tp_btf/timer_expire_entry")
int BPF_PROG(timer_entry, struct timer_list *timer)
{
	if (wanted())
		ran_fn(CHKWIN_RAN_TIMER, (__u64)timer->function);
	return 0;
}

/* (tasklet, func) since 6.0, where the tracepoint came; the loader checks. */
SEC("tp_btf/tasklet_entry")
int tasklet_entry(u64 *ctx)
{
	if (wanted())
		ran_fn(CHKWIN_RAN_TASKLET, ctx[1]);
	return 0;
}

/* A function that ran in a task of its own, and the task. */
static __always_inline void fill_ran_task(struct chkwin_rec *r, __u8 what, __u64 fn)
{
	fill_ran(r, what, fn, 0);
	bpf_get_current_comm(r->ran.comm, sizeof(r->ran.comm));
}

static __always_inline void ran_in_task(__u8 what, __u64 fn)
{
	count(CHKWIN_CNT_RAN);
	rec_write(CHKWIN_REC_RAN, bpf_ktime_get_ns(), CHKWIN_PROBE_RAN, fill_ran_task, what, fn);
}

SEC("tp_btf/workqueue_execute_start")
int BPF_PROG(work_start, struct work_struct *work)
{
	if (wanted())
		ran_in_task(CHKWIN_RAN_WORK, (__u64)work->func);
	return 0;
}

/* A kthread_worker's item (sched.h's, 5.13 on): the function, in its worker. */
SEC("tp_btf/sched_kthread_work_execute_start")
int BPF_PROG(kwork_start, struct kthread_work *work)
{
	if (wanted())
		ran_in_task(CHKWIN_RAN_KWORK, (__u64)work->func);
	return 0;
}

static __always_inline void fill_ran_ipi(struct chkwin_rec *r, __u32 from, const char *reason)
{
	fill_ran(r, CHKWIN_RAN_IPI_FROM, 0, from);
	bpf_probe_read_kernel_str(r->ran.comm, sizeof(r->ran.comm), reason);
}

/*
 * An IPI raised here, recorded on each CPU it is sent to (the record's
 * cpu, and that CPU's arrivals ring): the receiver's history then says
 * who sent the IPI it will take, which its own ipi_entry cannot.  The
 * first 64 CPUs of the mask.
 */
SEC("tp_btf/ipi_raise")
int BPF_PROG(ipi_raise, const struct cpumask *mask, const char *reason)
{
	__u64 bits, ts;
	__u32 from, tid;
	int c;

	if (!wanted())
		return 0;
	bits = mask->bits[0];
	ts = bpf_ktime_get_ns();
	from = bpf_get_smp_processor_id();
	tid = (__u32)bpf_get_current_pid_tgid();
	for (c = 0; c < 64 && c < (int)nr_cpus; c++) {
		if (!(bits & (1ULL << c)))
			continue;
		count(CHKWIN_CNT_RAN);
		rec_write_by(CHKWIN_REC_RAN, ts, c, tid, CHKWIN_PROBE_RAN, fill_ran_ipi, from,
			     reason);
	}
	return 0;
}

static __always_inline void fill_ran_switch(struct chkwin_rec *r, struct task_struct *next)
{
	fill_ran(r, CHKWIN_RAN_SWITCH, 0, next->pid);
	bpf_probe_read_kernel(r->ran.comm, sizeof(r->ran.comm), next->comm);
}

/* Only the task with checksum work open: every other switch would only fill the ring. */
SEC("tp_btf/sched_switch")
int BPF_PROG(switch_away, bool preempt, struct task_struct *prev, struct task_struct *next)
{
	struct chkwin_cpu_state *s;
	struct chkwin_inflight *f;

	if (!wanted())
		return 0;
	s = this_cpu_state();
	if (!s)
		return 0;
	f = &s->inflight;
	if (!f->open_tid || prev->pid != f->open_tid)
		return 0;
	count_in(s, CHKWIN_CNT_RAN);
	/* The switching task is prev, the one whose gate is open. */
	rec_write_by(CHKWIN_REC_RAN, bpf_ktime_get_ns(), inflight_cpu(f), f->open_tid,
		     CHKWIN_PROBE_RAN, fill_ran_switch, next);
	return 0;
}

/* The optional sampler: a cpu-clock hrtimer interrupt of known rate. */
static __always_inline void fill_sample(struct chkwin_rec *r, __u64 pc, __u64 sp,
					struct place p, __u8 el)
{
	r->sample.pc = pc;
	r->sample.sp = sp;
	r->sample.offset = p.offset;
	r->sample.class = p.class;
	r->sample.el = el;
	r->sample.func = p.func;
}

SEC("perf_event")
int sample(struct bpf_perf_event_data *ctx)
{
	__u64 pc = ctx->regs.pc, sp = ctx->regs.sp, ts;
	__u8 el = (ctx->regs.pstate >> 2) & 3;
	struct place p;

	if (floor_only)
		return 0;
	p = classify(pc, el);
	count(CHKWIN_CNT_SAMPLE_CLASS + p.class);
	count_watched(1, p.watch);
	hist_add(CHKWIN_HIST_SAMPLE, p);
	if (record_mode == CHKWIN_RECORD_COUNTS)
		return 0;
	ts = bpf_ktime_get_ns();
	rec_write(CHKWIN_REC_SAMPLE, ts, CHKWIN_PROBE_SAMPLE, fill_sample,
		  pc, sp, p, el);
	if (snapshot_on_window && p.class == CHKWIN_CLASS_WINDOW)
		snapshot(CHKWIN_REC_SAMPLE, ts);
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
