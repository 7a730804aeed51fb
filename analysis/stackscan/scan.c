/* Per function: decode once with capstone into small ops, then a forward
 * dataflow over them to a fixpoint.  A register's value is either unknown
 * or "entry sp + [lo, hi]" (an interval, because aligning down with "and"
 * loses the low bits); joins of different values give unknown, so the
 * fixpoint is reached in a few passes and a finding needs agreement on
 * every path. */
#include "scan.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NREG 32		/* x0..x30, then sp */
#define SP 31
#define CALL_CLOBBER (((UINT32_C(1) << 19) - 1) | (UINT32_C(1) << 30))

struct val {
	int known;
	int64_t lo, hi;		/* offsets from sp at function entry */
};

struct state {
	int reach;
	int has_rel;
	uint64_t rel;		/* address of the instruction that raised sp */
	struct val r[NREG];
};

enum kind {
	K_PLAIN,	/* only clobbers what it writes (calls too) */
	K_MOV,		/* dst = src */
	K_ADD,		/* dst = src + imm */
	K_AND,		/* dst = src & imm */
	K_JUMP,
	K_CJUMP,
	K_STOP,		/* ret, brk, data: no successor */
	K_INDIRECT,	/* br: successors unknown (a jump table, a tail call) */
};

struct op {
	uint8_t kind;
	int8_t dst, src;
	int8_t base;		/* memory base register, -1 if no access checked */
	uint8_t wb;		/* 0 none, 1 pre (base += disp), 2 post (+= post),
				 * 3 post by register (base unknown after) */
	uint32_t clobber;	/* registers written, as a bit mask */
	int64_t imm, disp, post;
	long target;		/* instruction index, -1 outside the function */
	int to_end;		/* a jump to the first address after the function */
};

struct scanner {
	csh cs;
	cs_insn *insn;
	struct op *ops;
	struct state *in;
	uint8_t *is_target;
	size_t cap;
	struct finding *pass;	/* findings of the current pass */
	size_t npass, passcap;
};

struct scanner *scanner_new(char *err)
{
	struct scanner *s = calloc(1, sizeof(*s));
	cs_err ce;

	if (!s) {
		fail(err, "out of memory");
		return NULL;
	}
	ce = cs_open(CS_ARCH_ARM64, CS_MODE_ARM, &s->cs);
	if (ce != CS_ERR_OK) {
		fail(err, "capstone: cs_open: %s", cs_strerror(ce));
		free(s);
		return NULL;
	}
	ce = cs_option(s->cs, CS_OPT_DETAIL, CS_OPT_ON);
	if (ce == CS_ERR_OK && !(s->insn = cs_malloc(s->cs)))
		ce = cs_errno(s->cs);
	if (ce != CS_ERR_OK) {
		fail(err, "capstone: %s", cs_strerror(ce));
		scanner_free(s);
		return NULL;
	}
	return s;
}

void scanner_free(struct scanner *s)
{
	if (!s)
		return;
	if (s->insn)
		cs_free(s->insn, 1);
	cs_close(&s->cs);
	free(s->ops);
	free(s->in);
	free(s->is_target);
	free(s->pass);
	free(s);
}

/* x0..x30 and sp as 0..31; -1 for anything else (w registers, xzr). */
static int xreg(unsigned r)
{
	if (r >= ARM64_REG_X0 && r <= ARM64_REG_X28)
		return r - ARM64_REG_X0;
	if (r == ARM64_REG_X29)
		return 29;
	if (r == ARM64_REG_X30)
		return 30;
	if (r == ARM64_REG_SP)
		return SP;
	return -1;
}

/* The 64-bit register an x or w register name writes. */
static int gpr(unsigned r)
{
	if (r >= ARM64_REG_W0 && r <= ARM64_REG_W30)
		return r - ARM64_REG_W0;
	if (r == ARM64_REG_WSP)
		return SP;
	return xreg(r);
}

static int grow(struct scanner *s, size_t n, char *err)
{
	void *p;

	if (n <= s->cap)
		return 0;
	if (!(p = realloc(s->ops, n * sizeof(*s->ops))))
		return fail(err, "out of memory");
	s->ops = p;
	if (!(p = realloc(s->in, n * sizeof(*s->in))))
		return fail(err, "out of memory");
	s->in = p;
	if (!(p = realloc(s->is_target, n)))
		return fail(err, "out of memory");
	s->is_target = p;
	s->cap = n;
	return 0;
}

static long target_index(struct op *op, int64_t target, uint64_t start,
			 size_t n)
{
	uint64_t t = (uint64_t)target;

	op->to_end = t == start + 4 * n;
	if (t < start || (t - start) % 4 || (t - start) / 4 >= n)
		return -1;
	return (long)((t - start) / 4);
}

static void classify(struct scanner *s, struct op *op, uint64_t start, size_t n)
{
	const cs_arm64 *a = &s->insn->detail->arm64;
	const cs_arm64_op *o = a->operands;
	cs_regs rd, wr;
	uint8_t nrd, nwr, i;

	if (cs_regs_access(s->cs, s->insn, rd, &nrd, wr, &nwr) == CS_ERR_OK)
		for (i = 0; i < nwr; i++)
			if (gpr(wr[i]) >= 0)
				op->clobber |= UINT32_C(1) << gpr(wr[i]);
	switch (s->insn->id) {
	case ARM64_INS_B:
		op->kind = a->cc == ARM64_CC_INVALID || a->cc == ARM64_CC_AL ?
			   K_JUMP : K_CJUMP;
		op->target = target_index(op, o[a->op_count - 1].imm, start, n);
		return;
	case ARM64_INS_CBZ:
	case ARM64_INS_CBNZ:
	case ARM64_INS_TBZ:
	case ARM64_INS_TBNZ:
		op->kind = K_CJUMP;
		op->target = target_index(op, o[a->op_count - 1].imm, start, n);
		return;
	case ARM64_INS_BL:
	case ARM64_INS_BLR:
		op->clobber |= CALL_CLOBBER;	/* then returns here */
		return;
	case ARM64_INS_BR:
		op->kind = K_INDIRECT;
		return;
	case ARM64_INS_RET:
	case ARM64_INS_ERET:
	case ARM64_INS_BRK:
	case ARM64_INS_HLT:
		op->kind = K_STOP;
		return;
	case ARM64_INS_MOV:
		if (a->op_count == 2 && o[0].type == ARM64_OP_REG &&
		    o[1].type == ARM64_OP_REG && xreg(o[0].reg) >= 0 &&
		    xreg(o[1].reg) >= 0) {
			op->kind = K_MOV;
			op->dst = xreg(o[0].reg);
			op->src = xreg(o[1].reg);
		}
		return;
	case ARM64_INS_ADD:
	case ARM64_INS_SUB:
	case ARM64_INS_AND:
		if (a->op_count == 3 && o[0].type == ARM64_OP_REG &&
		    o[1].type == ARM64_OP_REG && o[2].type == ARM64_OP_IMM &&
		    xreg(o[0].reg) >= 0 && xreg(o[1].reg) >= 0) {
			op->dst = xreg(o[0].reg);
			op->src = xreg(o[1].reg);
			op->imm = o[2].imm;
			if (s->insn->id == ARM64_INS_AND) {
				op->kind = K_AND;
				return;
			}
			if (o[2].shift.type == ARM64_SFT_LSL)
				op->imm *= INT64_C(1) << o[2].shift.value;
			if (s->insn->id == ARM64_INS_SUB)
				op->imm = -op->imm;
			op->kind = K_ADD;
		}
		return;
	case ARM64_INS_PRFM:
	case ARM64_INS_PRFUM:
		return;		/* a prefetch is no access */
	}
	for (i = 0; i < a->op_count; i++) {
		if (o[i].type != ARM64_OP_MEM)
			continue;
		/* [xN, xM]: the offset is not followed, nothing to check */
		if (o[i].mem.index != ARM64_REG_INVALID || xreg(o[i].mem.base) < 0)
			return;
		op->base = xreg(o[i].mem.base);
		op->disp = o[i].mem.disp;
		if (!a->writeback)
			return;
		if (i + 1 < a->op_count && o[i + 1].type == ARM64_OP_IMM) {
			op->wb = 2;
			op->post = o[i + 1].imm;
		} else {
			op->wb = i + 1 < a->op_count ? 3 : 1;
		}
		return;
	}
}

/* Fills s->ops for [start, start + 4n); returns the undecodable count. */
static size_t decode(struct scanner *s, const struct region *r, uint64_t start,
		     size_t n)
{
	size_t i, undecoded = 0, m = 0;
	size_t lo = 0, hi = r->nmarks;

	/* the mapping symbol in force at start: the last one at or before it */
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (r->marks[mid].addr <= start)
			lo = mid + 1;
		else
			hi = mid;
	}
	m = lo;
	for (i = 0; i < n; i++) {
		uint64_t addr = start + 4 * i;
		const uint8_t *code = r->data + (addr - r->addr);
		size_t size = 4;
		struct op *op = &s->ops[i];

		*op = (struct op){ .kind = K_PLAIN, .dst = -1, .src = -1,
				   .base = -1, .target = -1 };
		while (m < r->nmarks && r->marks[m].addr <= addr)
			m++;
		if (m > 0 && r->marks[m - 1].is_data) {
			op->kind = K_STOP;
			continue;
		}
		if (!cs_disasm_iter(s->cs, &code, &size, &addr, s->insn)) {
			/* Capstone 4 lacks newer extensions (LSE atomics, PAC):
			 * assume the usual Rt and Rs fields are written. */
			uint32_t w = code[0] | code[1] << 8 | code[2] << 16 |
				     (uint32_t)code[3] << 24;

			if ((w & 31) != 31)
				op->clobber |= UINT32_C(1) << (w & 31);
			if (((w >> 16) & 31) != 31)
				op->clobber |= UINT32_C(1) << ((w >> 16) & 31);
			undecoded++;
			continue;
		}
		classify(s, op, start, n);
	}
	return undecoded;
}

static int join_into(struct state *dst, const struct state *src)
{
	int i, changed = 0;

	if (!dst->reach) {
		*dst = *src;
		return 1;
	}
	for (i = 0; i < NREG; i++) {
		struct val *d = &dst->r[i];
		const struct val *v = &src->r[i];

		if (d->known && !(v->known && v->lo == d->lo && v->hi == d->hi)) {
			d->known = 0;
			changed = 1;
		}
	}
	return changed;
}

/* Aligning entry sp + [lo, hi] down to a power of two a: sp is 16-byte
 * aligned at entry, so up to 16 this is exact, and beyond it drops at
 * most a - 16 more. */
static struct val align_down(struct val v, int64_t mask)
{
	uint64_t a = ~(uint64_t)mask + 1;

	if (!v.known || !a || (a & (a - 1)))
		return (struct val){ 0 };
	if (a <= 16)
		return (struct val){ 1, v.lo & mask, v.hi & mask };
	return (struct val){ 1, (v.lo & ~INT64_C(15)) - (int64_t)(a - 16),
			     v.hi & ~INT64_C(15) };
}

static int add_finding(struct scanner *s, const struct state *st,
		       const struct val *base, int64_t disp, uint64_t addr,
		       char *err)
{
	const struct val *sp = &st->r[SP];

	if (s->npass == s->passcap) {
		size_t cap = s->passcap ? 2 * s->passcap : 16;
		struct finding *p = realloc(s->pass, cap * sizeof(*p));

		if (!p)
			return fail(err, "out of memory");
		s->pass = p;
		s->passcap = cap;
	}
	s->pass[s->npass++] = (struct finding){
		.addr = addr, .release = st->rel, .has_release = st->has_rel,
		.below_min = sp->lo - (base->hi + disp),
		.below_max = sp->hi - (base->lo + disp),
	};
	return 0;
}

static int transfer(struct scanner *s, const struct op *op, struct state *st,
		    uint64_t addr, char *err)
{
	struct val v = { 0 }, nb = { 0 }, old_sp = st->r[SP];
	uint32_t c;
	int i;

	if (op->base >= 0 && !(op->base == SP && op->wb)) {
		const struct val *b = &st->r[op->base];

		/* the first byte is below sp on every path */
		if (b->known && old_sp.known && b->hi + op->disp < old_sp.lo &&
		    add_finding(s, st, b, op->disp, addr, err))
			return -1;
	}
	if (op->kind == K_MOV)
		v = st->r[op->src];
	else if (op->kind == K_ADD && st->r[op->src].known)
		v = (struct val){ 1, st->r[op->src].lo + op->imm,
				  st->r[op->src].hi + op->imm };
	else if (op->kind == K_AND)
		v = align_down(st->r[op->src], op->imm);
	if (op->wb == 1 || op->wb == 2) {
		nb = st->r[op->base];
		nb.lo += op->wb == 1 ? op->disp : op->post;
		nb.hi += op->wb == 1 ? op->disp : op->post;
	}
	for (c = op->clobber, i = 0; c; c >>= 1, i++)
		if (c & 1)
			st->r[i].known = 0;
	if (op->dst >= 0)
		st->r[op->dst] = v;
	if (op->wb)
		st->r[op->base] = nb;
	if (!st->r[SP].known) {
		st->has_rel = 0;
	} else if (!old_sp.known || st->r[SP].lo > old_sp.hi) {
		st->has_rel = 1;
		st->rel = addr;
	}
	return 0;
}

/* One pass in address order.  Returns 1 if a backward edge changed a
 * state already used in this pass (so another pass is needed), 0 if not,
 * -1 on error.  *runs_on: control leaves by the end of the code. */
/* What a br leaves for code that nothing else reaches (jump-table cases):
 * its state, less any register below sp, so that code after a tail call
 * from a released frame is not blamed for pointers into that frame. */
static void join_indirect(struct state *brs, const struct state *cur)
{
	struct state t = *cur;
	int i;

	for (i = 0; i < NREG; i++)
		if (t.r[i].known && (!t.r[SP].known || t.r[i].lo < t.r[SP].lo))
			t.r[i].known = 0;
	join_into(brs, &t);
}

static int run_pass(struct scanner *s, size_t n, uint64_t start,
		    size_t *unreached, int *runs_on, char *err)
{
	struct state cur = { .reach = 1 }, brs = { .reach = 0 };
	int again = 0;
	size_t i;

	cur.r[SP].known = 1;
	s->npass = 0;
	*unreached = 0;
	*runs_on = 0;
	for (i = 0; i < n; i++) {
		const struct op *op = &s->ops[i];

		if (s->is_target[i]) {
			if (cur.reach)
				join_into(&s->in[i], &cur);
			cur = s->in[i];
		}
		if (!cur.reach)
			cur = brs;
		if (!cur.reach) {
			++*unreached;
			continue;
		}
		if (transfer(s, op, &cur, start + 4 * i, err))
			return -1;
		if ((op->kind == K_JUMP || op->kind == K_CJUMP) && op->target >= 0 &&
		    join_into(&s->in[op->target], &cur) && (size_t)op->target <= i)
			again = 1;
		if ((op->kind == K_JUMP || op->kind == K_CJUMP) && op->to_end)
			*runs_on = 1;
		if (op->kind == K_INDIRECT)
			join_indirect(&brs, &cur);
		if (op->kind == K_JUMP || op->kind == K_STOP ||
		    op->kind == K_INDIRECT)
			cur.reach = 0;
	}
	*runs_on |= cur.reach;
	return again;
}

static int scan_func(struct scanner *s, const struct region *r, uint64_t start,
		     uint64_t end, size_t fi, struct finding **out, size_t *nout,
		     struct scan_stats *st, int *runs_on, char *err)
{
	size_t n = (end - start) / 4, i, unreached = 0;
	int rc;

	if (grow(s, n, err))
		return -1;
	st->undecoded += decode(s, r, start, n);
	memset(s->is_target, 0, n);
	for (i = 0; i < n; i++)
		if (s->ops[i].target >= 0) {
			s->is_target[s->ops[i].target] = 1;
			s->in[s->ops[i].target].reach = 0;
		}
	while ((rc = run_pass(s, n, start, &unreached, runs_on, err)) == 1)
		;
	if (rc < 0)
		return -1;
	st->instructions += n;
	st->unreached += unreached;
	if (s->npass) {
		struct finding *p = realloc(*out, (*nout + s->npass) * sizeof(*p));

		if (!p)
			return fail(err, "out of memory");
		*out = p;
		for (i = 0; i < s->npass; i++) {
			s->pass[i].func = fi;
			p[(*nout)++] = s->pass[i];
		}
	}
	return 0;
}

/* A System.map has no sizes, so a local label (a window marker, say)
 * looks like a function of its own.  Where control runs on from one
 * symbol into the next, they are scanned again as one function, up to
 * MAX_RUN_ON symbols: longer chains are calls that never return (a
 * function ending in bl panic looks as if it ran on), and rescanning
 * each longer chain whole made a 6.12 Image take minutes. */
#define MAX_RUN_ON 16
int scan_image(struct scanner *s, const struct image *img,
	       struct finding **out, size_t *nout, struct scan_stats *st,
	       char *err)
{
	size_t i, j;

	for (i = 0; i < img->nfuncs; i = j + 1) {
		const struct func *f = &img->funcs[i];
		const struct region *r = &img->regions[f->region];
		uint64_t end = f->end;
		struct scan_stats one;
		size_t mark = *nout;
		int runs_on;

		if (f->start % 4) {
			j = i;
			continue;	/* not aarch64 code */
		}
		for (j = i;; j++) {
			const struct func *g = &img->funcs[j + 1];

			one = (struct scan_stats){ 0 };
			*nout = mark;
			end -= (end - f->start) % 4;
			if (scan_func(s, r, f->start, end, i, out, nout, &one,
				      &runs_on, err))
				return -1;
			if (!runs_on || j + 1 == img->nfuncs || j + 1 - i >= MAX_RUN_ON ||
			    !g->maybe_continues || g->region != f->region ||
			    g->start != end)
				break;
			end = g->end;
		}
		st->functions++;
		st->instructions += one.instructions;
		st->undecoded += one.undecoded;
		st->unreached += one.unreached;
	}
	return 0;
}

void scanner_insn_text(struct scanner *s, const struct image *img,
		       size_t region, uint64_t addr, char *buf, size_t len)
{
	const struct region *r = &img->regions[region];
	const uint8_t *code = r->data + (addr - r->addr);
	size_t size = 4;

	if (cs_disasm_iter(s->cs, &code, &size, &addr, s->insn))
		snprintf(buf, len, "%s%s%s", s->insn->mnemonic,
			 s->insn->op_str[0] ? " " : "", s->insn->op_str);
	else
		snprintf(buf, len, ".inst 0x%02x%02x%02x%02x", code[3], code[2],
			 code[1], code[0]);
}
