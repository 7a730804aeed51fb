/* SPDX-License-Identifier: GPL-2.0 */
/* The in-kernel counters and histograms, summed over CPUs. */
#ifndef CHKWIN_STATS_H
#define CHKWIN_STATS_H

#include <stdint.h>

#include <linux/types.h>

#include "chkwin.h"

struct chkwin_counts {
	uint64_t v[CHKWIN_COUNTERS];
};

struct chkwin_hist {
	uint64_t v[CHKWIN_HIST_ENTRIES];
};

int chkwin_counts_read(int map_fd, int ncpus, struct chkwin_counts *out);
int chkwin_hist_read(int map_fd, int ncpus, struct chkwin_hist *out);
/* --windows: arrivals per watched window, interrupts then sampler ticks (2n). */
int chkwin_watch_counts_read(int map_fd, int ncpus, uint64_t *out, uint32_t n);

static inline uint64_t chkwin_hist_at(const struct chkwin_hist *h, int src, int func, int slot)
{
	return h->v[(src * CHKWIN_FUNCS + func) * CHKWIN_HIST_SLOTS + slot];
}

uint64_t chkwin_counts_lost(const struct chkwin_counts *c);

#endif /* CHKWIN_STATS_H */
