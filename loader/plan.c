// SPDX-License-Identifier: GPL-2.0
/*
 * Which program serves each hook on this kernel.  Lab kernels have the
 * ext4 checksum tracepoints; a stock kernel inlines ext4_chksum(), so the
 * crc32c shash update and __ext4_iget() are kprobed instead (caller kinds
 * then come from the stack, callers.c).  fexit is
 * used only if a real attach succeeds (arm64 6.1 cannot: -ENOTSUPP).  The
 * interrupted pc, sp and pstate come from __irq_regs where kallsyms has it
 * (KALLSYMS_ALL), else from the regs arm64 hands do_interrupt_handler()
 * (kprobed, and kretprobed where they stop being the current ones) where
 * a kprobe there registers, else the pc alone from the stack.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <linux/perf_event.h>
#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include <linux/bpf.h>

#include "callers.h"
#include "kallsyms.h"
#include "names.h"
#include "plan.h"

struct kernel_btf {
	struct btf *vmlinux;
	struct btf *ext4;	/* NULL when ext4 is built in */
};

static int find_type(const struct kernel_btf *kb, const char *name, __u32 kind,
		     struct btf **where)
{
	int id = btf__find_by_name_kind(kb->vmlinux, name, kind);

	*where = kb->vmlinux;
	if (id < 0 && kb->ext4) {
		id = btf__find_by_name_kind(kb->ext4, name, kind);
		*where = kb->ext4;
	}
	return id;
}

static bool has_tp(const struct kernel_btf *kb, const char *tp)
{
	struct btf *where;
	char name[128];

	snprintf(name, sizeof(name), "btf_trace_%s", tp);
	return find_type(kb, name, BTF_KIND_TYPEDEF, &where) >= 0;
}

/* Parameters of a tracepoint, not counting the context pointer. */
static int tp_arity(const struct kernel_btf *kb, const char *tp)
{
	const struct btf_type *t;
	struct btf *where;
	char name[128];
	int id;

	snprintf(name, sizeof(name), "btf_trace_%s", tp);
	id = find_type(kb, name, BTF_KIND_TYPEDEF, &where);
	if (id < 0)
		return -1;
	t = btf__type_by_id(where, id);
	t = btf__type_by_id(where, t->type);		/* pointer */
	if (!t || !btf_is_ptr(t))
		return -1;
	t = btf__type_by_id(where, t->type);		/* prototype */
	return t && btf_is_func_proto(t) ? btf_vlen(t) - 1 : -1;
}

/* The kernel's BTF object for a module, as an fd fexit can attach with. */
static int module_btf_fd(const char *module)
{
	__u32 id = 0;

	while (!bpf_btf_get_next_id(id, &id)) {
		struct bpf_btf_info info = { 0 };
		__u32 len = sizeof(info);
		char name[64] = "";
		int fd = bpf_btf_get_fd_by_id(id);

		if (fd < 0)
			continue;
		info.name = (__u64)(unsigned long)name;
		info.name_len = sizeof(name);
		if (!bpf_obj_get_info_by_fd(fd, &info, &len) && !strcmp(name, module))
			return fd;
		close(fd);
	}
	return -ENOENT;
}

/* As libbpf-tools do: load a trivial fexit program and try to attach it. */
static bool fexit_attaches(const struct kernel_btf *kb, const char *func)
{
	struct bpf_insn insns[] = {
		{ .code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_0 },
		{ .code = BPF_JMP | BPF_EXIT },
	};
	struct btf *where;
	int id = find_type(kb, func, BTF_KIND_FUNC, &where);
	int obj_fd = 0, prog_fd, link_fd;

	if (id < 0)
		return false;
	if (where == kb->ext4) {
		obj_fd = module_btf_fd("ext4");
		if (obj_fd < 0)
			return false;
	}
	LIBBPF_OPTS(bpf_prog_load_opts, load, .expected_attach_type = BPF_TRACE_FEXIT,
		    .attach_btf_id = (__u32)id, .attach_btf_obj_fd = (__u32)obj_fd);
	prog_fd = bpf_prog_load(BPF_PROG_TYPE_TRACING, "chkwin_probe", "GPL", insns,
				sizeof(insns) / sizeof(insns[0]), &load);
	if (obj_fd > 0)
		close(obj_fd);
	if (prog_fd < 0)
		return false;
	link_fd = bpf_raw_tracepoint_open(NULL, prog_fd);
	close(prog_fd);
	if (link_fd < 0)
		return false;
	close(link_fd);
	return true;
}

/* A number a sysfs file holds, or -1. */
static long sysfs_number(const char *path, const char *format)
{
	FILE *f = fopen(path, "r");
	long v;

	if (!f)
		return -1;
	if (fscanf(f, format, &v) != 1)
		v = -1;
	fclose(f);
	return v;
}

/*
 * 0 if a kprobe and a kretprobe on func register, else -errno: creating
 * the perf kprobe event (disabled, so it never fires) is where the kernel
 * refuses a blacklisted or unknown function.
 */
static int kprobe_registers(const char *func)
{
	long type = sysfs_number("/sys/bus/event_source/devices/kprobe/type", "%ld");
	long retbit = sysfs_number("/sys/bus/event_source/devices/kprobe/format/retprobe",
				   "config:%ld");
	int ret;

	if (type < 0 || retbit < 0 || retbit > 63)
		return -ENOENT;
	for (ret = 0; ret < 2; ret++) {
		struct perf_event_attr attr = {
			.size = sizeof(attr),
			.type = (__u32)type,
			.config = ret ? 1ULL << retbit : 0,
			.config1 = (__u64)(unsigned long)func,
			.disabled = 1,
		};
		int fd = (int)syscall(SYS_perf_event_open, &attr, -1, 0, -1, PERF_FLAG_FD_CLOEXEC);

		if (fd < 0)
			return -errno;
		close(fd);
	}
	return 0;
}

static void read_callers(const struct kernel_btf *kb, struct chkwin_plan *plan)
{
	const struct btf_type *t;
	const struct btf_enum *e;
	struct btf *where;
	int id = find_type(kb, "ext4_chksum_caller", BTF_KIND_ENUM, &where), i;

	if (id < 0)
		return;
	t = btf__type_by_id(where, id);
	e = btf_enum(t);
	for (i = 0; i < btf_vlen(t) && plan->ncallers < CHKWIN_MAX_CALLERS; i++, e++) {
		const char *name = btf__name_by_offset(where, e->name_off);

		if (e->val >= 0 && e->val < CHKWIN_MAX_CALLERS && name) {
			plan->callers[e->val] = strdup(name);
			if ((int)e->val >= plan->ncallers)
				plan->ncallers = (int)e->val + 1;
		}
	}
}

static int failed(struct chkwin_plan *plan, const char *fmt, const char *arg)
{
	snprintf(plan->error, sizeof(plan->error), fmt, arg);
	return -1;
}

/* A hook attached in way (a CHKWIN_WAY_* bit), said as mode. */
static void attach(struct chkwin_plan *p, enum chkwin_hook hook, unsigned int way,
		   const char *mode)
{
	p->way[hook] = way;
	p->mode[hook] = mode;
}

static int plan_chksum(const struct chkwin_opts *o, const struct kernel_btf *kb,
		       const struct ksyms *ks, struct chkwin_plan *p)
{
	bool tp = has_tp(kb, "ext4_chksum_begin") && has_tp(kb, "ext4_chksum_end");
	const struct ksym *update = NULL;
	const char *func = "ext4_chksum";
	int n = 0;

	p->kernel_kind = tp ? "lab" : "stock";
	p->record = o->record;
	if (o->off[HOOK_CHKSUM]) {
		p->mode[HOOK_CHKSUM] = "off";
	} else if (tp && o->mode != ATTACH_FALLBACK) {
		attach(p, HOOK_CHKSUM, CHKWIN_WAY_TP, "tp_btf");
	} else if (o->mode == ATTACH_TRACEPOINT) {
		return failed(p, "no ext4_chksum_begin/_end tracepoints in %s (not a chkwin kernel?)",
			      "kernel BTF");
	} else if ((update = ksyms_pick(ks, "chksum_update", "crc32c_generic", &n)) ||
		   /* Built in (Debian's -cloud), crc32c_generic's is beside its cra_init. */
		   (n > 1 && (update = ksyms_pick_near(ks, "chksum_update", "crc32c_cra_init")))) {
		attach(p, HOOK_CHKSUM, CHKWIN_WAY_KPROBE, "kprobe:chksum_update");
		func = "chksum_update";
		if (n > 1) {
			p->chksum_update_addr = update->addr;
			snprintf(p->chksum_mode, sizeof(p->chksum_mode),
				 "kprobe:crc32c_generic:chksum_update@0x%llx (%d share the name)",
				 (unsigned long long)update->addr, n);
			p->mode[HOOK_CHKSUM] = p->chksum_mode;
		}
	} else if (n > 1) {
		snprintf(p->error, sizeof(p->error),
			 "%d symbols are called chksum_update and none is crc32c_generic's", n);
		return -1;
	} else {
		return failed(p, "no checksum probe: neither the ext4_chksum tracepoints nor %s",
			      "chksum_update (crc32c_generic) in kallsyms");
	}
	/* Arrivals are placed in ext4_chksum() if it is out of line. */
	if (p->way[HOOK_CHKSUM] != CHKWIN_WAY_TP && ksyms_addr(ks, "ext4_chksum"))
		func = "ext4_chksum";
	if (update && !strcmp(func, "chksum_update") ?
	    !ksyms_range_of(ks, update, &p->func[0].start, &p->func[0].end) :
	    !ksyms_range(ks, func, &p->func[0].start, &p->func[0].end))
		p->func[0].name = func;
	if (!ksyms_range(ks, "ext4_chksum_gcc49", &p->func[1].start, &p->func[1].end))
		p->func[1].name = "ext4_chksum_gcc49";
	return 0;
}

static int plan_iget(const struct chkwin_opts *o, const struct kernel_btf *kb,
		     const struct ksyms *ks, struct chkwin_plan *p)
{
	bool tp = has_tp(kb, "ext4_inode_csum_verify");

	if (o->off[HOOK_VERIFY])
		p->mode[HOOK_VERIFY] = "off";
	else if (tp && o->mode != ATTACH_FALLBACK)
		attach(p, HOOK_VERIFY, CHKWIN_WAY_TP, "tp_btf");
	else if (o->mode == ATTACH_TRACEPOINT)
		return failed(p, "no ext4_inode_csum_verify tracepoint in %s", "kernel BTF");
	else
		p->mode[HOOK_VERIFY] = "absent";
	/* Newer than the inode verdicts: where it is missing, only they are seen. */
	if (o->off[HOOK_VERIFY_META])
		p->mode[HOOK_VERIFY_META] = "off";
	else if (has_tp(kb, "ext4_metadata_csum_verify") && o->mode != ATTACH_FALLBACK)
		attach(p, HOOK_VERIFY_META, CHKWIN_WAY_TP, "tp_btf");
	else
		p->mode[HOOK_VERIFY_META] = "absent";

	if (o->off[HOOK_IGET]) {
		p->mode[HOOK_IGET] = "off";
	} else if (o->record == CHKWIN_RECORD_FAILURES && !strcmp(p->mode[HOOK_VERIFY], "tp_btf")) {
		/*
		 * The verdict tracepoint sees every inode verdict first, and its
		 * mismatch snapshots: iget's kprobe pair would only cost.
		 */
		p->mode[HOOK_IGET] = CHKWIN_NOT_ATTACHED
			" (-R failures: ext4_inode_csum_verify gives every inode verdict)";
	} else if (!ksyms_addr(ks, "__ext4_iget")) {
		return failed(p, "no %s in kallsyms (is ext4 loaded?)", "__ext4_iget");
	} else if (o->mode != ATTACH_FALLBACK && fexit_attaches(kb, "__ext4_iget")) {
		attach(p, HOOK_IGET, CHKWIN_WAY_FEXIT, "fexit");
	} else {
		attach(p, HOOK_IGET, CHKWIN_WAY_KPROBE, "kprobe+kretprobe");
	}
	return 0;
}

/* The EL1 and EL0 irq vectors the stack walk looks for: 0, or -1 and none. */
static int find_irq_vectors(const struct ksyms *ks, struct chkwin_plan *p)
{
	if (!ksyms_range(ks, "el1h_64_irq", &p->el1_irq_start, &p->el1_irq_end) &&
	    !ksyms_range(ks, "el0t_64_irq", &p->el0_irq_start, &p->el0_irq_end))
		return 0;
	p->el1_irq_start = p->el1_irq_end = p->el0_irq_start = p->el0_irq_end = 0;
	return -1;
}

static bool irq_pc_may(const struct chkwin_opts *o, enum chkwin_irq_pc how)
{
	return o->irq_pc == how || o->irq_pc == IRQ_PC_AUTO;
}

/* IPI kinds and softirqs: what the arrivals' probes add. */
static int plan_irq_context(const struct chkwin_opts *o, const struct kernel_btf *kb,
			    struct chkwin_plan *p)
{
	if (o->off[HOOK_IPI] || o->off[HOOK_IRQ])
		p->mode[HOOK_IPI] = "off";
	else if (has_tp(kb, "ipi_entry"))
		attach(p, HOOK_IPI, CHKWIN_WAY_TP, "tp_btf");
	else
		p->mode[HOOK_IPI] = "absent";

	if (o->off[HOOK_SOFTIRQ])
		p->mode[HOOK_SOFTIRQ] = "off";
	else if (has_tp(kb, "softirq_entry") && has_tp(kb, "softirq_exit"))
		attach(p, HOOK_SOFTIRQ, CHKWIN_WAY_TP, "tp_btf");
	else
		return failed(p, "no softirq_entry/exit tracepoints in %s", "kernel BTF");
	return 0;
}

static int plan_irq(const struct chkwin_opts *o, const struct kernel_btf *kb,
		    const struct ksyms *ks, struct chkwin_plan *p)
{
	int n = 0, kprobe = -ENOENT;

	if (o->off[HOOK_IRQ]) {
		p->mode[HOOK_IRQ] = "off";
		return plan_irq_context(o, kb, p);
	}
	if (!has_tp(kb, "irq_handler_entry") || !has_tp(kb, "irq_handler_exit"))
		return failed(p, "no irq_handler_entry/exit tracepoints in %s", "kernel BTF");
	if (irq_pc_may(o, IRQ_PC_IRQ_REGS) &&
	    /* Fallback plans as for a kernel without KALLSYMS_ALL. */
	    (o->mode != ATTACH_FALLBACK || o->irq_pc == IRQ_PC_IRQ_REGS) &&
	    ksyms_addr(ks, "__irq_regs")) {
		attach(p, HOOK_IRQ, CHKWIN_WAY_IRQ_REGS, chkwin_irq_pc_modes[IRQ_PC_IRQ_REGS]);
		p->irq_pc = IRQ_PC_IRQ_REGS;
	} else if (irq_pc_may(o, IRQ_PC_KPROBE) &&
		   ksyms_pick(ks, CHKWIN_IRQ_REGS_FUNC, NULL, &n) && n == 1 &&
		   !(kprobe = kprobe_registers(CHKWIN_IRQ_REGS_FUNC))) {
		attach(p, HOOK_IRQ, CHKWIN_WAY_IRQ_KPROBE, chkwin_irq_pc_modes[IRQ_PC_KPROBE]);
		p->irq_pc = IRQ_PC_KPROBE;
		/* For the arrivals the kprobe misses; without them those are unknown. */
		find_irq_vectors(ks, p);
	} else if (irq_pc_may(o, IRQ_PC_STACK) && !find_irq_vectors(ks, p)) {
		attach(p, HOOK_IRQ, CHKWIN_WAY_IRQ_STACK, chkwin_irq_pc_modes[IRQ_PC_STACK]);
		p->irq_pc = IRQ_PC_STACK;
	} else if (o->irq_pc == IRQ_PC_IRQ_REGS) {
		return failed(p, "--irq-pc irq_regs: no %s in kallsyms (CONFIG_KALLSYMS_ALL)",
			      "__irq_regs");
	} else if (o->irq_pc == IRQ_PC_KPROBE && !n) {
		return failed(p, "--irq-pc kprobe: no %s in kallsyms", CHKWIN_IRQ_REGS_FUNC);
	} else if (o->irq_pc == IRQ_PC_KPROBE && n > 1) {
		snprintf(p->error, sizeof(p->error), "--irq-pc kprobe: %d symbols called %s "
			 "in kallsyms, not one", n, CHKWIN_IRQ_REGS_FUNC);
		return -1;
	} else if (o->irq_pc == IRQ_PC_KPROBE) {
		snprintf(p->error, sizeof(p->error), "--irq-pc kprobe: the kernel refuses a "
			 "kprobe on %s: %s", CHKWIN_IRQ_REGS_FUNC, strerror(-kprobe));
		return -1;
	} else if (o->irq_pc == IRQ_PC_STACK) {
		return failed(p, "--irq-pc stack: no %s vectors in kallsyms",
			      "el1h_64_irq/el0t_64_irq");
	} else {
		return failed(p, "no way to the interrupted pc: no __irq_regs, no kprobe on "
			      CHKWIN_IRQ_REGS_FUNC ", no %s vectors in kallsyms",
			      "el1h_64_irq/el0t_64_irq");
	}
	return plan_irq_context(o, kb, p);
}

/*
 * What ran inside the computations: one tracepoint a hook, each planned
 * where the kernel has it (absent otherwise).  Only the records need
 * them: -R counts leaves them out.
 */
static const struct {
	enum chkwin_hook hook;
	const char *tp;
	int arity;		/* parameters the program reads, at least */
} ran_tps[] = {
	{ HOOK_HRTIMER, "hrtimer_expire_entry", 1 },
	{ HOOK_TIMER, "timer_expire_entry", 1 },
	/* Its function is the second parameter (6.0 on, where it came). */
	{ HOOK_TASKLET, "tasklet_entry", 2 },
	{ HOOK_WORK, "workqueue_execute_start", 1 },
	{ HOOK_SWITCH, "sched_switch", 3 },
	{ HOOK_KWORK, "sched_kthread_work_execute_start", 1 },
	{ HOOK_IPI_FROM, "ipi_raise", 2 },
};

static void plan_ran(const struct chkwin_opts *o, const struct kernel_btf *kb,
		     struct chkwin_plan *p)
{
	size_t i;

	for (i = 0; i < sizeof(ran_tps) / sizeof(ran_tps[0]); i++) {
		enum chkwin_hook h = ran_tps[i].hook;

		if (o->off[h])
			p->mode[h] = "off";
		else if (o->record == CHKWIN_RECORD_COUNTS)
			p->mode[h] = CHKWIN_NOT_ATTACHED " (-R counts keeps no ran records)";
		else if (tp_arity(kb, ran_tps[i].tp) >= ran_tps[i].arity)
			attach(p, h, CHKWIN_WAY_TP, "tp_btf");
		else
			p->mode[h] = "absent";
	}
}

static int plan_block(const struct chkwin_opts *o, const struct kernel_btf *kb,
		      struct chkwin_plan *p)
{
	int arity = tp_arity(kb, "block_rq_issue");

	if (o->off[HOOK_BLOCK]) {
		p->mode[HOOK_BLOCK] = "off";
		return 0;
	}
	if (arity < 1 || arity > 2 || !has_tp(kb, "block_rq_complete"))
		return failed(p, "no usable block_rq_issue/complete tracepoints in %s",
			      "kernel BTF");
	/* v5.11 dropped the request_queue argument of block_rq_issue. */
	p->rq_issue_arg = arity - 1;
	/* The history keeps completions; issues would only feed a counter. */
	if (o->record == CHKWIN_RECORD_FAILURES)
		attach(p, HOOK_BLOCK, CHKWIN_WAY_TP_COMPLETE, "tp_btf (block_rq_complete; "
		       "block_rq_issue " CHKWIN_NOT_ATTACHED " under -R failures)");
	else
		attach(p, HOOK_BLOCK, CHKWIN_WAY_TP, "tp_btf");
	return 0;
}

int chkwin_plan_make(const struct chkwin_opts *o, struct chkwin_plan *p)
{
	struct kernel_btf kb = { 0 };
	struct ksyms ks;
	int err;

	memset(p, 0, sizeof(*p));
	if (o->windows &&
	    chkwin_windows_read(o->windows, &p->watched, p->error, sizeof(p->error)))
		return -1;
	if (ksyms_load(&ks, o->kallsyms))
		return failed(p, "cannot read kernel symbols from %s", o->kallsyms);
	if (o->windows &&
	    chkwin_windows_place(&p->watched, &ks, p->error, sizeof(p->error))) {
		ksyms_free(&ks);
		return -1;
	}
	kb.vmlinux = btf__load_vmlinux_btf();
	if (!kb.vmlinux) {
		ksyms_free(&ks);
		return failed(p, "no kernel BTF (%s): CONFIG_DEBUG_INFO_BTF is needed",
			      "/sys/kernel/btf/vmlinux");
	}
	kb.ext4 = btf__load_module_btf("ext4", kb.vmlinux);

	err = plan_chksum(o, &kb, &ks, p);
	if (!err)
		err = plan_iget(o, &kb, &ks, p);
	if (!err)
		err = plan_irq(o, &kb, &ks, p);
	if (!err)
		err = plan_block(o, &kb, p);
	plan_ran(o, &kb, p);
	if (o->sample_hz)
		attach(p, HOOK_SAMPLE, CHKWIN_WAY_PERF_EVENT, "perf_event");
	else
		p->mode[HOOK_SAMPLE] = "off";
	/* A snapshot walks its rings with bpf_loop (5.17). */
	if (!err && o->record == CHKWIN_RECORD_FAILURES &&
	    libbpf_probe_bpf_helper(BPF_PROG_TYPE_KPROBE, BPF_FUNC_loop, NULL) != 1)
		err = failed(p, "--record failures needs bpf_loop, which this kernel lacks (5.17+); %s",
			     "use --record all");
	read_callers(&kb, p);
	p->caller_source = "none";
	if (!err && p->way[HOOK_CHKSUM] == CHKWIN_WAY_TP) {
		p->caller_source = "tracepoint";
	} else if (!err && chkwin_plan_on(p, HOOK_CHKSUM)) {
		chkwin_callers_default(p);
		err = chkwin_callers_plan(&ks, p);
		p->caller_source = "stack";
	}

	btf__free(kb.ext4);
	btf__free(kb.vmlinux);
	ksyms_free(&ks);
	return err;
}

void chkwin_plan_free(struct chkwin_plan *p)
{
	int i;

	chkwin_windows_free(&p->watched);
	for (i = 0; i < CHKWIN_MAX_CALLERS; i++)
		free((char *)p->callers[i]);
	memset(p->callers, 0, sizeof(p->callers));
}
