/* SPDX-License-Identifier: GPL-2.0 */
/* The log's header and trailer text (docs/log-format.md). */
#ifndef CHKWIN_HEADER_H
#define CHKWIN_HEADER_H

#include <stdint.h>

#include "logfile.h"
#include "opts.h"
#include "plan.h"
#include "stats.h"
#include "strbuf.h"

/* The plan's lines of the header: mode.HOOK, func.N and the windows found;
 * --dry-run prints the same lines. */
void chkwin_plan_text(struct text *t, const struct chkwin_plan *p);
void chkwin_header_text(struct text *t, const struct chkwin_opts *o,
			const struct chkwin_plan *p, int ncpus, uint64_t started_ns);
/* watch: the plan's watched windows' arrivals (interrupts, then sampler ticks). */
void chkwin_trailer_text(struct text *t, const struct chkwin_plan *p,
			 const uint64_t written[CHKWIN_REC_TYPES],
			 const struct chkwin_counts *c, const uint64_t *watch,
			 const struct chkwin_hist *h, uint64_t ended_ns, const char *ending);

/* The lab flavour from a kernel release ("6.1.0-chkwin-patched"), or "stock". */
const char *chkwin_flavour(const char *release);

#endif /* CHKWIN_HEADER_H */
