/* SPDX-License-Identifier: GPL-2.0 */
/* The log's names of record types, classes, probes and counters. */
#ifndef CHKWIN_NAMES_H
#define CHKWIN_NAMES_H

#include <linux/types.h>

#include "chkwin.h"

/* A trailer's count.NAME or lost.NAME whose hooks the run left out. */
#define CHKWIN_NOT_ATTACHED "not-attached"

extern const char *const chkwin_class_names[CHKWIN_CLASSES];
extern const char *const chkwin_probe_names[CHKWIN_PROBES];

/* A record type's name, or NULL for a number that is none. */
const char *chkwin_rec_name(unsigned int type);
/* Name of counter i as the trailer spells it (count.NAME). */
const char *chkwin_counter_name(int i, char *buf, unsigned long len);

#endif /* CHKWIN_NAMES_H */
