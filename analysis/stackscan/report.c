/* Output: one line per finding (text) or one JSON object, both naming the
 * function and offset, the access, the instruction that raised sp last and
 * how far below sp the access starts. */
#include "report.h"
#include "jsonstr.h"

#include <inttypes.h>
#include <stdint.h>
#include <string.h>

#define TEXTLEN 160

struct line {
	const struct func *fn;
	const struct region *rg;
	char access[TEXTLEN], release[TEXTLEN];
	struct allow_entry *why;
};

static void describe(struct scanner *s, const struct report *r,
		     const struct finding *f, struct line *l)
{
	l->fn = &r->img->funcs[f->func];
	l->rg = &r->img->regions[l->fn->region];
	scanner_insn_text(s, r->img, l->fn->region, f->addr, l->access,
			  sizeof(l->access));
	l->release[0] = 0;
	if (f->has_release)
		scanner_insn_text(s, r->img, l->fn->region, f->release,
				  l->release, sizeof(l->release));
	l->why = allow_match(r->allow, l->fn->name, f->addr - l->fn->start);
	if (l->why)
		l->why->used = 1;
}

size_t report_text(FILE *out, struct scanner *s, const struct report *r)
{
	size_t i, bad = 0;

	for (i = 0; i < r->n; i++) {
		const struct finding *f = &r->f[i];
		struct line l;

		describe(s, r, f, &l);
		bad += !l.why;
		fprintf(out, "%s%s+0x%" PRIx64 " (%s 0x%" PRIx64 "): %s: ",
			l.why ? "allowed: " : "", l.fn->name,
			f->addr - l.fn->start, l.rg->name, f->addr, l.access);
		if (f->below_min == f->below_max)
			fprintf(out, "%" PRId64 " bytes below sp", f->below_min);
		else
			fprintf(out, "%" PRId64 "..%" PRId64 " bytes below sp",
				f->below_min, f->below_max);
		if (f->has_release)
			fprintf(out, "; sp raised at +0x%" PRIx64 " by %s",
				f->release - l.fn->start, l.release);
		else
			fprintf(out, "; sp not raised before it");
		if (l.why)
			fprintf(out, " [%s]", l.why->reason);
		fputc('\n', out);
	}
	fprintf(out, "%zu finding%s (%zu allowed) in %zu functions, %zu "
		"instructions (%zu undecodable, %zu unreached) of %s\n", bad,
		bad == 1 ? "" : "s", r->n - bad, r->st->functions,
		r->st->instructions, r->st->undecoded, r->st->unreached, r->path);
	for (i = 0; i < r->allow->n; i++)
		if (!r->allow->e[i].used)
			fprintf(out, "allow-list entry not needed: %s (line %d)\n",
				r->allow->e[i].func, r->allow->e[i].line);
	return bad;
}

static void json_finding(FILE *out, const struct finding *f,
			 const struct line *l)
{
	fputs("{\"function\": ", out);
	json_str(out, l->fn->name, SIZE_MAX);
	fprintf(out, ", \"offset\": %" PRIu64 ", \"section\": ",
		f->addr - l->fn->start);
	json_str(out, l->rg->name, SIZE_MAX);
	fprintf(out, ", \"address\": %" PRIu64 ", \"access\": ", f->addr);
	json_str(out, l->access, SIZE_MAX);
	fprintf(out, ", \"below_sp_min\": %" PRId64 ", \"below_sp_max\": %"
		PRId64 ", \"release\": ", f->below_min, f->below_max);
	if (f->has_release) {
		fprintf(out, "{\"offset\": %" PRIu64 ", \"address\": %" PRIu64
			", \"insn\": ", f->release - l->fn->start, f->release);
		json_str(out, l->release, SIZE_MAX);
		fputc('}', out);
	} else {
		fputs("null", out);
	}
	if (l->why) {
		fputs(", \"reason\": ", out);
		json_str(out, l->why->reason, SIZE_MAX);
	}
	fputc('}', out);
}

size_t report_json(FILE *out, struct scanner *s, const struct report *r)
{
	size_t i, bad = 0;
	int pass, first;

	fputs("{\"file\": ", out);
	json_str(out, r->path, SIZE_MAX);
	fputs(", \"kind\": ", out);
	json_str(out, r->img->kind, SIZE_MAX);
	fputs(", \"symbols\": ", out);
	json_str(out, r->symbols, SIZE_MAX);
	fprintf(out, ", \"functions\": %zu, \"instructions\": %zu, "
		"\"undecodable\": %zu, \"unreached\": %zu", r->st->functions,
		r->st->instructions, r->st->undecoded, r->st->unreached);
	/* pass 0: findings the allow-list does not explain; 1: those it does */
	for (pass = 0; pass < 2; pass++) {
		fputs(pass ? ", \"allowed\": [" : ", \"findings\": [", out);
		for (first = 1, i = 0; i < r->n; i++) {
			struct line l;

			describe(s, r, &r->f[i], &l);
			if (!l.why != !pass)
				continue;
			bad += !pass;
			fputs(first ? "" : ", ", out);
			first = 0;
			json_finding(out, &r->f[i], &l);
		}
		fputc(']', out);
	}
	fputs(", \"unused_allow\": [", out);
	for (first = 1, i = 0; i < r->allow->n; i++) {
		if (r->allow->e[i].used)
			continue;
		fputs(first ? "" : ", ", out);
		first = 0;
		json_str(out, r->allow->e[i].func, SIZE_MAX);
	}
	fputs("]}\n", out);
	return bad;
}

/* A windows-file location: [MODULE:]FUNC+0xOFF. */
static void location(FILE *out, const struct report *r, const struct func *fn,
		     uint64_t addr)
{
	fprintf(out, "%s%s%s+0x%" PRIx64, r->module ? r->module : "",
		r->module ? ":" : "", fn->name, addr - fn->start);
}

size_t report_windows(FILE *out, struct scanner *s, const struct report *r)
{
	size_t i, n = 0;

	fprintf(out, "chkwin-windows 1\n# stackscan %s\n", r->path);
	for (i = 0; i < r->n; i++) {
		const struct finding *f = &r->f[i];
		struct line l;

		describe(s, r, f, &l);
		if (l.why)
			continue;
		if (!f->has_release || f->release >= f->addr) {
			/* Below sp from the function's entry: no release opens it. */
			fputs("# no window: ", out);
			location(out, r, l.fn, f->addr);
			fputs(" is below sp without an earlier release\n", out);
			continue;
		}
		location(out, r, l.fn, f->addr);
		fputc(' ', out);
		location(out, r, l.fn, f->release + 4);
		fputc(' ', out);
		location(out, r, l.fn, f->addr);
		fprintf(out, " size=0x%" PRIx64 " release=", l.fn->end - l.fn->start);
		location(out, r, l.fn, f->release);
		fputs(" access=", out);
		location(out, r, l.fn, f->addr);
		if (f->below_min == f->below_max)
			fprintf(out, " below_sp=%" PRId64 "\n", f->below_min);
		else
			fprintf(out, " below_sp=%" PRId64 "..%" PRId64 "\n",
				f->below_min, f->below_max);
		n++;
	}
	return n;
}
