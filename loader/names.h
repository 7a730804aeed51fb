/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The log's names of record types, classes, hooks, probes and counters,
 * and what each counter needs: bpf/chkwin.h's tables as the loader uses
 * them.
 */
#ifndef CHKWIN_NAMES_H
#define CHKWIN_NAMES_H

#include <linux/types.h>

#include "chkwin.h"

/* A trailer's count.NAME or lost.NAME whose hooks the run left out. */
#define CHKWIN_NOT_ATTACHED "not-attached"

extern const char *const chkwin_class_names[CHKWIN_CLASSES];
extern const char *const chkwin_probe_names[CHKWIN_PROBES];
/* mode.NAME in the header; --no-NAME, with dashes, on the command line. */
extern const char *const chkwin_hook_names[HOOKS];
/* --record values, indexed by enum chkwin_record_mode; the log's "record" key. */
extern const char *const chkwin_record_names[];

/* A record type's name, or NULL for a number that is none. */
const char *chkwin_rec_name(unsigned int type);
/* Name of counter i as the trailer spells it (count.NAME), or lost.PROBE. */
const char *chkwin_counter_name(int i, char *buf, unsigned long len);
/* The CHKWIN_NEED_* bits counter i is counted under. */
unsigned int chkwin_counter_needs(int i);

#endif /* CHKWIN_NAMES_H */
