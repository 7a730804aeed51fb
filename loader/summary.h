/* SPDX-License-Identifier: GPL-2.0 */
/* The live summary each interval and the closing histogram. */
#ifndef CHKWIN_SUMMARY_H
#define CHKWIN_SUMMARY_H

#include <stdbool.h>
#include <stdio.h>

#include "opts.h"
#include "plan.h"
#include "stats.h"

struct chkwin_summary {
	FILE *out;
	enum chkwin_format format;
	bool verify_on;		/* failures come from verdicts, else from iget */
	bool header_done;
	struct chkwin_counts last;
};

void chkwin_summary_init(struct chkwin_summary *s, FILE *out, enum chkwin_format format,
			 const struct chkwin_plan *plan);
/* One line for the interval since the previous call; elapsed in seconds. */
void chkwin_summary_line(struct chkwin_summary *s, const struct chkwin_counts *now,
			 double elapsed);
void chkwin_summary_hist(struct chkwin_summary *s, const struct chkwin_plan *plan,
			 const struct chkwin_hist *h);

#endif /* CHKWIN_SUMMARY_H */
