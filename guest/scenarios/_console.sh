# Sourced, not run: the lines a guest prints on its console for the host,
# written by guest/init.  Each tag is declared here only:
# guest/host/console_lines.py reads these assignments to parse them.
CHKWIN_TAG_STATUS=CHKWIN-STATUS
CHKWIN_TAG_CALLS=CHKWIN-CALLS
CHKWIN_TAG_PROC_BEGIN=CHKWIN-PROC-BEGIN
CHKWIN_TAG_PROC_END=CHKWIN-PROC-END

# console_status CODE: how the run ended; the host takes the last such line.
console_status() {
	echo "$CHKWIN_TAG_STATUS $1"
}

# console_calls N: the ext4_chksum() calls the scenario made.
console_calls() {
	echo "$CHKWIN_TAG_CALLS $1"
}

# console_proc LABEL: uptime, interrupt counts and CPU time, for the host's
# interrupt rates per busy guest second (the failure model's lambda).
console_proc() {
	echo "$CHKWIN_TAG_PROC_BEGIN $1"
	cat /proc/uptime /proc/interrupts
	grep '^cpu ' /proc/stat
	echo "$CHKWIN_TAG_PROC_END $1"
}
