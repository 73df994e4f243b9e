/*
 * jitterscope-traceparse: raw tracefs ring-buffer pages -> nested kernel
 * activity intervals and exclusive segments.
 *
 *   jitterscope-traceparse [--scan] [--tsc-hz HZ] [--window START END [--open-end]] [--cpu N] [--events FILE]
 *                          [--spill ROWS]
 *                          TRACE_DIR OUT_DIR
 *   jitterscope-traceparse --layout
 *
 * TRACE_DIR holds cpuN.raw (pages copied from per_cpu/cpuN/trace_pipe_raw),
 * events.txt (page header layout and, per enabled event, its id, role and
 * field offsets, written by jitterscope.tracing.formats), and optionally
 * symbols.txt ("hexaddr name") and comms.txt ("pid comm").  OUT_DIR receives
 * activity.bin and segments.bin (layouts in trace_records.h), strings.bin
 * (NUL-terminated strings, referenced by index) and counts.json (per-CPU
 * event/lost counts, the capture markers, the function addresses and pids
 * still to be named).  --scan writes only counts.json: the session uses it
 * at stop to learn which symbols and comms to save.  A scan runs no stack machine (scan_event): its event,
 * page and loss counts, markers and addresses are a parse's, its pids to look up a superset of a parse's,
 * and it has no activity, segment, unmatched, truncated or missed-switch counts.  --events FILE also lists every
 * event decoded, as read (one line each: cpu, timestamp, event id, then the fields
 * used, name=value), for the cross-check with libtraceevent (trace-cmd report) in
 * tests/integration/test_trace_cmd_crosscheck.py.
 *
 * --detours FILE --t0 TSC --ns-per-tick K (with --cpu N): FILE holds that CPU's detours as int64
 * (start, end) pairs in ns since t0, sorted by start (they may overlap: a pipeline's iterations in flight,
 * each attributed whole).  The segments are then not written; the
 * detours' overlaps with them are (pieces.bin, summed per owner's kind, name and pid), and each
 * work/timer activity's container
 * (containers.bin): the streaming analysis's attribution done where the segments are, in the ns
 * measure/tsc.py since_ns gives (rint of the tick difference times K, K as Python prints it).
 *
 * One pass per CPU, a small stack machine per CPU.  The records are written out as the pages are
 * parsed (spill()), so memory stays bounded whatever the run's length: --spill ROWS sets how many
 * are held (tests make it small, and compare the files with those of one spill at the end).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <math.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include "js_alloc.h"

#include "trace_records.h"

static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void die(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("jitterscope-traceparse: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    exit(2);
}

/* ---- ring buffer constants (include/linux/ring_buffer.h) ---------------- */
#define RB_PADDING 29
#define RB_TIME_EXTEND 30
#define RB_TIME_STAMP 31
#define RB_MISSED_EVENTS (1ull << 31)
#define RB_MISSED_STORED (1ull << 30)
#define RB_COMMIT_MASK ((1ull << 27) - 1)
#define TS_SHIFT 27
#define TS_MSB (0xf8ull << 56)

/* ---- strings: interned, referenced by index ------------------------------ */
static char *str_buf;
static size_t str_len, str_cap;
static uint32_t *str_off; /* offset of string i in str_buf */
static uint32_t str_n, str_offcap;
static uint32_t *str_hash; /* open addressing: index+1, 0 = empty */
static uint32_t str_hcap;

static uint64_t fnv(const char *s, size_t n)
{
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++)
        h = (h ^ (unsigned char)s[i]) * 1099511628211ull;
    return h;
}

static void str_rehash(void)
{
    uint32_t cap = str_hcap ? str_hcap * 2 : 1024;
    free(str_hash);
    str_hash = js_calloc(cap, sizeof *str_hash);
    str_hcap = cap;
    for (uint32_t i = 0; i < str_n; i++) {
        const char *s = str_buf + str_off[i];
        uint64_t h = fnv(s, strlen(s)) & (cap - 1);
        while (str_hash[h])
            h = (h + 1) & (cap - 1);
        str_hash[h] = i + 1;
    }
}

static uint32_t intern_n(const char *s, size_t n)
{
    if ((str_n + 1) * 2 > str_hcap)
        str_rehash();
    uint64_t h = fnv(s, n) & (str_hcap - 1);
    while (str_hash[h]) {
        const char *t = str_buf + str_off[str_hash[h] - 1];
        if (strncmp(t, s, n) == 0 && t[n] == 0)
            return str_hash[h] - 1;
        h = (h + 1) & (str_hcap - 1);
    }
    if (str_len + n + 1 > str_cap) {
        str_cap = (str_len + n + 1) * 2 + 4096;
        str_buf = js_realloc(str_buf, str_cap);
    }
    if (str_n == str_offcap) {
        str_offcap = str_offcap ? str_offcap * 2 : 1024;
        str_off = js_realloc(str_off, str_offcap * sizeof *str_off);
    }
    memcpy(str_buf + str_len, s, n);
    str_buf[str_len + n] = 0;
    str_off[str_n] = (uint32_t)str_len;
    str_len += n + 1;
    str_hash[h] = str_n + 1;
    return str_n++;
}

static uint32_t intern(const char *s) { return intern_n(s, strlen(s)); }

static uint32_t intern_int_slow(long long v)
{
    char b[32];
    int n = snprintf(b, sizeof b, "%lld", v);
    return intern_n(b, (size_t)n);
}

/* pids, irq and vector numbers repeat: a direct-mapped cache spares the
 * formatting and hashing on every context switch */
#define INT_CACHE 4096
static struct { long long v; uint32_t id; } int_cache[INT_CACHE];
static uint8_t int_cache_used[INT_CACHE];

static uint32_t intern_int(long long v)
{
    size_t h = (size_t)((unsigned long long)v * 0x9E3779B97F4A7C15ull >> 52) & (INT_CACHE - 1);
    if (int_cache_used[h] && int_cache[h].v == v)
        return int_cache[h].id;
    uint32_t id = intern_int_slow(v);
    int_cache[h].v = v;
    int_cache[h].id = id;
    int_cache_used[h] = 1;
    return id;
}

/* ---- events.txt: page layout and the enabled events ---------------------- */
enum role {
    R_NONE, R_IRQ_ENTRY, R_IRQ_EXIT, R_SOFTIRQ_ENTRY, R_SOFTIRQ_EXIT, R_VEC_ENTRY, R_VEC_EXIT,
    R_NMI, R_SWITCH, R_WORK_START, R_WORK_END, R_HRT_ENTRY, R_HRT_EXIT, R_TMR_ENTRY,
    R_TMR_EXIT, R_PRINT, R_NROLES
};
static const char *role_names[R_NROLES] = {
    "none", "irq_entry", "irq_exit", "softirq_entry", "softirq_exit", "vec_entry", "vec_exit",
    "nmi", "switch", "work_start", "work_end", "hrt_entry", "hrt_exit", "tmr_entry",
    "tmr_exit", "print",
};

struct field { int off, size; };
#define MAXF 6
struct evdef {
    uint8_t role;
    uint32_t label;           /* vector name for R_VEC_* */
    int vector;               /* its vector number if known, else -1 */
    struct field f[MAXF];     /* role-specific, see field_names */
};
/* Field order per role (names as in the kernel's format files). */
#define SWITCH_PREV_STATE 4  /* f[] slot of sched_switch's optional prev_state */
static const char *field_names[R_NROLES][MAXF] = {
    [R_IRQ_ENTRY] = {"irq", "name"},
    [R_IRQ_EXIT] = {"irq"},
    [R_SOFTIRQ_ENTRY] = {"vec"},
    [R_SOFTIRQ_EXIT] = {"vec"},
    [R_VEC_ENTRY] = {"vector"},
    [R_VEC_EXIT] = {"vector"},
    [R_NMI] = {"handler", "delta_ns"},
    [R_SWITCH] = {"prev_comm", "prev_pid", "next_comm", "next_pid"},
    [R_WORK_START] = {"work", "function"},
    [R_WORK_END] = {"work"},
    [R_HRT_ENTRY] = {"hrtimer", "function"},
    [R_HRT_EXIT] = {"hrtimer"},
    [R_TMR_ENTRY] = {"timer", "function"},
    [R_TMR_EXIT] = {"timer"},
    [R_PRINT] = {"buf"},
};

static struct evdef events[65536];
static int pg_ts_off = 0, pg_ts_size = 8, pg_commit_off = 8, pg_commit_size = 8;
static int pg_data_off = 16, pg_data_size = 4080;
static uint32_t softirq_name[32];
static int n_softirq_names;
static int pid_off = 4;

static void load_events(const char *dir)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/events.txt", dir);
    FILE *f = fopen(path, "r");
    if (!f)
        die("%s: %s", path, strerror(errno));
    char line[4096];
    while (fgets(line, sizeof line, f)) {
        char *save = NULL, *tok = strtok_r(line, " \t\n", &save);
        if (!tok || tok[0] == '#')
            continue;
        if (!strcmp(tok, "page")) {
            char *k;
            while ((k = strtok_r(NULL, " \t\n", &save))) {
                char *o = strtok_r(NULL, " \t\n", &save), *s = strtok_r(NULL, " \t\n", &save);
                if (!o || !s)
                    die("%s: bad page line", path);
                int off = atoi(o), size = atoi(s);
                if (!strcmp(k, "timestamp")) pg_ts_off = off, pg_ts_size = size;
                else if (!strcmp(k, "commit")) pg_commit_off = off, pg_commit_size = size;
                else if (!strcmp(k, "data")) pg_data_off = off, pg_data_size = size;
            }
        } else if (!strcmp(tok, "common_pid")) {
            pid_off = atoi(strtok_r(NULL, " \t\n", &save));
        } else if (!strcmp(tok, "softirqs")) {
            char *k;
            while ((k = strtok_r(NULL, " \t\n", &save)) && n_softirq_names < 32)
                softirq_name[n_softirq_names++] = intern(k);
        } else if (!strcmp(tok, "event")) {
            /* event ID ROLE LABEL VECTOR name off size ... */
            char *id = strtok_r(NULL, " \t\n", &save), *role = strtok_r(NULL, " \t\n", &save);
            char *label = strtok_r(NULL, " \t\n", &save), *vec = strtok_r(NULL, " \t\n", &save);
            if (!id || !role || !label || !vec)
                die("%s: bad event line", path);
            long eid = strtol(id, NULL, 10);
            if (eid < 0 || eid > 65535)
                die("%s: event id %ld out of range", path, eid);
            struct evdef *e = &events[eid];
            memset(e, 0, sizeof *e);
            for (int r = 0; r < R_NROLES; r++)
                if (!strcmp(role, role_names[r]))
                    e->role = (uint8_t)r;
            /* entry and exit of a vector share the same label lookup */
            if (!strcmp(role, "vec_exit"))
                e->role = R_VEC_EXIT;
            e->label = intern(label);
            e->vector = atoi(vec);
            for (int i = 0; i < MAXF; i++)
                e->f[i].off = -1;
            char *k;
            while ((k = strtok_r(NULL, " \t\n", &save))) {
                char *o = strtok_r(NULL, " \t\n", &save), *s = strtok_r(NULL, " \t\n", &save);
                if (!o || !s)
                    die("%s: bad field in event %ld", path, eid);
                for (int i = 0; i < MAXF && field_names[e->role][i]; i++)
                    if (!strcmp(k, field_names[e->role][i]))
                        e->f[i].off = atoi(o), e->f[i].size = atoi(s);
                /* optional: whether a switched-out task was still runnable (preempted) */
                if (e->role == R_SWITCH && !strcmp(k, "prev_state"))
                    e->f[SWITCH_PREV_STATE].off = atoi(o), e->f[SWITCH_PREV_STATE].size = atoi(s);
            }
            for (int i = 0; i < MAXF && field_names[e->role][i]; i++)
                if (e->f[i].off < 0)
                    die("%s: event %ld (%s) lacks field %s", path, eid, role, field_names[e->role][i]);
        }
    }
    fclose(f);
}

/* ---- symbols.txt / comms.txt --------------------------------------------- */
struct sym { uint64_t addr; uint32_t name; };
static struct sym *syms;
static size_t nsyms;

static int sym_cmp(const void *a, const void *b)
{
    uint64_t x = ((const struct sym *)a)->addr, y = ((const struct sym *)b)->addr;
    return x < y ? -1 : x > y;
}

static void load_symbols(const char *dir)
{
    char path[4096], line[1024];
    snprintf(path, sizeof path, "%s/symbols.txt", dir);
    FILE *f = fopen(path, "r");
    if (!f)
        return;
    size_t cap = 0;
    while (fgets(line, sizeof line, f)) {
        char *end;
        uint64_t a = strtoull(line, &end, 16);
        while (*end == ' ')
            end++;
        end[strcspn(end, "\n")] = 0;
        if (!*end)
            continue;
        if (nsyms == cap) {
            cap = cap ? cap * 2 : 256;
            syms = js_realloc(syms, cap * sizeof *syms);
        }
        syms[nsyms].addr = a;
        syms[nsyms++].name = intern(end);
    }
    fclose(f);
    qsort(syms, nsyms, sizeof *syms, sym_cmp);
}

/* A set of nonzero keys, open addressing: the function addresses seen, the pids a scan lists. */
struct keyset { uint64_t *slot; size_t n, cap; };

static size_t keyset_hash(uint64_t key, size_t cap) { return (size_t)(key * 0x9E3779B97F4A7C15ull >> 20) & (cap - 1); }

/* Whether `key` was not in the set yet (it is now). */
static int keyset_add(struct keyset *s, uint64_t key)
{
    if (!key)
        return 0;
    if ((s->n + 1) * 2 > s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 256;
        uint64_t *n = js_calloc(cap, sizeof *n);
        for (size_t i = 0; i < s->cap; i++)
            if (s->slot[i]) {
                size_t h = keyset_hash(s->slot[i], cap);
                while (n[h])
                    h = (h + 1) & (cap - 1);
                n[h] = s->slot[i];
            }
        free(s->slot);
        s->slot = n;
        s->cap = cap;
    }
    size_t h = keyset_hash(key, s->cap);
    while (s->slot[h]) {
        if (s->slot[h] == key)
            return 0;
        h = (h + 1) & (s->cap - 1);
    }
    s->slot[h] = key;
    s->n++;
    return 1;
}

static struct keyset addrs; /* function addresses seen (counts.json: to be named at stop) */

static void addr_add(uint64_t a) { keyset_add(&addrs, a); }

/* Function pointer -> interned name (the symbol, else 0x...). Cached by address. */
static uint32_t func_name(uint64_t a)
{
    addr_add(a);
    size_t lo = 0, hi = nsyms;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (syms[mid].addr < a)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo < nsyms && syms[lo].addr == a)
        return syms[lo].name;
    char b[32];
    int n = snprintf(b, sizeof b, "0x%" PRIx64, a);
    return intern_n(b, (size_t)n);
}

/* comms.txt: interned only when a placeholder takes one (a scan lists more pids than the parse needs, and an
 * unused name would still be a string of the run's tables) */
struct comm { int32_t pid; char *text; uint32_t name; int interned; };
static struct comm *comms;
static size_t ncomms;

static void load_comms(const char *dir)
{
    char path[4096], line[256];
    snprintf(path, sizeof path, "%s/comms.txt", dir);
    FILE *f = fopen(path, "r");
    if (!f)
        return;
    size_t cap = 0;
    while (fgets(line, sizeof line, f)) {
        char *end;
        long pid = strtol(line, &end, 10);
        if (*end == ' ')
            end++;
        end[strcspn(end, "\n")] = 0;
        if (ncomms == cap) {
            cap = cap ? cap * 2 : 64;
            comms = js_realloc(comms, cap * sizeof *comms);
        }
        comms[ncomms].pid = (int32_t)pid;
        comms[ncomms].text = js_strdup(end);
        comms[ncomms++].interned = 0;
    }
    fclose(f);
}

/* ---- output ---------------------------------------------------------------- */
/* Records leave memory while the capture is parsed (spill(), below), so the parser's memory does not
 * grow with the run: acts[] holds records act_base..nacts-1 (the rest are in activity.bin, or counted
 * and dropped by a scan); a written record still open (a thread slice that began long ago, the IRQs
 * inside it written meanwhile) is held apart in held[] and written again at its offset, once
 * closed, by a later spill or at the end.  Indices are global: a record's index is its row. */
static struct js_activity *acts;
static size_t nacts, actcap, act_base;
struct held_act { size_t idx; struct js_activity a; };
static struct held_act *held;
static size_t nheld, heldcap;
static int act_fd = -1; /* activity.bin; -1 for a scan */
/* Records (40 B) or segments (24 B) held before spilling (--spill N: tests spill every few rows, and
 * must get the same files); a span unsettled after SETTLE_ROWS of either is taken as settled. */
static size_t spill_rows = (size_t)1 << 19;
#define SETTLE_ROWS ((size_t)1 << 19)

static struct js_activity *held_find(size_t i)
{
    for (size_t k = 0; k < nheld; k++)
        if (held[k].idx == i)
            return &held[k].a;
    return NULL;
}

static struct js_activity *held_act(size_t i)
{
    struct js_activity *a = held_find(i);
    if (a)
        return a;
    fprintf(stderr, "jitterscope-traceparse: internal error: record %zu was spilled while in use\n", i);
    abort();
}

static inline struct js_activity *A(size_t i) { return i >= act_base ? &acts[i - act_base] : held_act(i); }

/* Segments likewise: segs[] holds seg_base..nsegs-1.  With --detours each keeps its owner's kind, name
 * and pid as they were when it was emitted (segkey[]), so a detour's pieces are summed per owner
 * without reading records that may have been written out since. */
struct segkey { uint32_t name; int32_t pid; uint8_t kind; };
static struct js_segment *segs;
static struct segkey *segkeys;
static size_t nsegs, segcap, seg_base;
static int scan_only;
static const char *detours_path;

static void note_annotation(size_t row, int64_t start_tsc);

static uint32_t new_act(int cpu, uint8_t kind, int64_t start, uint32_t name, uint32_t detail,
                        int32_t pid, int depth, uint8_t flags)
{
    if (nacts - act_base == actcap) {
        actcap = actcap ? actcap * 2 : 4096;
        acts = js_realloc(acts, actcap * sizeof *acts);
    }
    struct js_activity *a = &acts[nacts - act_base];
    a->start_tsc = start;
    a->end_tsc = start;
    a->cpu = cpu;
    a->pid = pid;
    a->name = name;
    a->detail = detail;
    a->depth = (int16_t)depth;
    a->kind = kind;
    a->flags = flags;
    a->reserved = 0;
    if (nacts >= UINT32_MAX - 1)
        die("more than 2^32 activity intervals");
    if (detours_path && (kind == JS_KIND_WORK || kind == JS_KIND_TIMER))
        note_annotation(nacts, start);
    return (uint32_t)nacts++;
}

static inline struct js_segment *seg(size_t i) { return &segs[i - seg_base]; }

/* The last segment emitted (it may still be extended; spill() never drops it). */
static inline struct js_segment *last_seg(void) { return nsegs > seg_base ? seg(nsegs - 1) : NULL; }

static inline struct segkey key_of(uint32_t owner)
{
    const struct js_activity *o = A(owner);
    return (struct segkey){o->name, o->pid, o->kind};
}

static void emit_seg(int cpu, int64_t a, int64_t b, uint32_t owner)
{
    if (b <= a)
        return;
    struct js_segment *last = last_seg();
    if (last && last->owner == owner && last->end_tsc == a && last->cpu == cpu) {
        last->end_tsc = b;
        return;
    }
    if (nsegs - seg_base == segcap) {
        segcap = segcap ? segcap * 2 : 4096;
        segs = js_realloc(segs, segcap * sizeof *segs);
        if (detours_path)
            segkeys = js_realloc(segkeys, segcap * sizeof *segkeys);
    }
    segs[nsegs - seg_base] = (struct js_segment){a, b, cpu, owner};
    if (detours_path)
        segkeys[nsegs - seg_base] = key_of(owner);
    nsegs++;
}

/* ---- per-CPU state machine ------------------------------------------------ */
#define MAXSTACK 32
#define MAXANN 16
#define MAXSUSP 8
struct frame { uint32_t act; uint8_t kind; int64_t key; };
struct ann { uint32_t act; uint8_t kind; uint64_t key; int level; };
struct susp { int32_t pid; uint32_t name, detail; uint64_t key; int valid; };

struct cpustate {
    int cpu;
    int open;                 /* a span (contiguous traced time) is open */
    struct frame st[MAXSTACK];
    int n;                    /* st[0] is the thread, st[n-1] the innermost */
    struct ann an[MAXANN];
    int nan;
    struct susp su[MAXSUSP];  /* work items of kworkers switched out mid-item */
    int64_t seg_start, span_start, last_ts;
    size_t span_first_seg, span_first_act;
    int switch_seen;          /* a sched_switch happened in this span */
    int settled;              /* its start is no longer revised (retro_open): spill() may write it out */
    int base_unnamed;         /* st[0]'s comm is not known yet */
    int32_t scan_cur;         /* --scan: the thread believed to run (scan_known: believed at all) */
    int scan_known;
    /* counts */
    uint64_t nevents, pages, missed_pages, missed_stored, missed_unknown, unmatched, truncated, missed_switches;
    int64_t first_ts;
    int64_t pending_start;    /* where the next span starts (window start or a page after a gap) */
};

static double tsc_per_ns = 0;
static int64_t window_start = INT64_MIN, window_end = INT64_MIN;
/* --open-end: the window's end is not the trace's own (a killed run's: the probe's end), so what ran after a
 * CPU's last event is unknown: its last span ends there rather than being stretched to the window's end */
static int open_end;
static uint32_t S_EMPTY, S_HRTIMER, S_TIMER;

/* Placeholders (threads whose comm is unknown) to name at the end. */
struct unnamed_row { uint32_t row; int32_t pid; };
static struct unnamed_row *unnamed;
static size_t nunnamed, unnamedcap;

static void mark_unnamed(uint32_t act)
{
    if (nunnamed == unnamedcap) {
        unnamedcap = unnamedcap ? unnamedcap * 2 : 64;
        unnamed = js_realloc(unnamed, unnamedcap * sizeof *unnamed);
    }
    unnamed[nunnamed++] = (struct unnamed_row){act, A(act)->pid};
}

static inline uint32_t top_owner(struct cpustate *c) { return c->st[c->n - 1].act; }

/* The innermost context changes at t: the time since seg_start was its. */
static inline void flush(struct cpustate *c, int64_t t)
{
    if (t > c->seg_start) {
        emit_seg(c->cpu, c->seg_start, t, top_owner(c));
        c->seg_start = t;
    }
}

static void close_ann_above(struct cpustate *c, int level, int64_t t)
{
    while (c->nan && c->an[c->nan - 1].level >= level) {
        struct ann *a = &c->an[--c->nan];
        A(a->act)->end_tsc = t;
        A(a->act)->flags |= JS_CLIPPED_END;
    }
}

/* Close frames st[i..n-1] at t; those above `keep_ok` were left open by lost exits. */
static void close_frames(struct cpustate *c, int i, int64_t t, uint8_t flags)
{
    close_ann_above(c, i, t);
    for (int k = c->n - 1; k >= i; k--) {
        A(c->st[k].act)->end_tsc = t;
        A(c->st[k].act)->flags |= flags;
    }
    c->n = i;
}

static void open_thread(struct cpustate *c, int64_t t, uint32_t name, int32_t pid, uint8_t flags)
{
    uint32_t a = new_act(c->cpu, JS_KIND_THREAD, t, name, intern_int(pid), pid, 0, flags);
    c->st[0] = (struct frame){a, JS_KIND_THREAD, pid};
    c->n = 1;
    c->base_unnamed = 0;
    /* a kworker coming back resumes the work item it was running */
    for (int i = 0; i < MAXSUSP; i++)
        if (c->su[i].valid && c->su[i].pid == pid) {
            uint32_t w = new_act(c->cpu, JS_KIND_WORK, t, c->su[i].name, c->su[i].detail, pid, 1, 0);
            c->an[c->nan++] = (struct ann){w, JS_KIND_WORK, c->su[i].key, 1};
            c->su[i].valid = 0;
            break;
        }
}

static uint32_t swapper_name(int cpu)
{
    static int cached_cpu = -1;
    static uint32_t cached;
    if (cpu != cached_cpu) {
        char b[32];
        snprintf(b, sizeof b, "swapper/%d", cpu);
        cached = intern(b);
        cached_cpu = cpu;
    }
    return cached;
}

/* Start contiguous traced time at t; the running task is `pid` (comm unknown). */
static void span_open(struct cpustate *c, int64_t t, int32_t pid)
{
    c->open = 1;
    c->span_start = c->seg_start = t;
    c->span_first_seg = nsegs;
    c->span_first_act = nacts;
    c->switch_seen = 0;
    c->settled = 0;
    c->nan = 0;
    if (pid == 0) {
        open_thread(c, t, swapper_name(c->cpu), 0, JS_CLIPPED_START);
    } else {
        open_thread(c, t, S_EMPTY, pid, JS_CLIPPED_START);
        c->base_unnamed = 1;
        mark_unnamed(c->st[0].act);
    }
}

static void span_close(struct cpustate *c, int64_t t)
{
    if (!c->open)
        return;
    flush(c, t);
    close_frames(c, 0, t, JS_CLIPPED_END);
    c->open = 0;
}

/* An exit whose entry precedes the span: the activity ran from the span start.
 * Only sound before the first context switch of the span (nothing is known
 * about what ran then except that this context enclosed everything seen). */
static void retro_open(struct cpustate *c, uint8_t kind, uint32_t name, uint32_t detail, int64_t t,
                       int32_t pid)
{
    flush(c, t);
    close_frames(c, 1, t, JS_CLIPPED_END);
    uint32_t base = c->st[0].act;
    uint32_t x = new_act(c->cpu, kind, c->span_start, name, detail, pid, 1, JS_CLIPPED_START);
    A(x)->end_tsc = t;
    for (size_t i = c->span_first_act; i < x; i++)
        if (i != base && A(i)->kind != JS_KIND_THREAD)
            A(i)->depth++;
    for (size_t i = c->span_first_seg; i < nsegs; i++)
        if (seg(i)->owner == base) {
            seg(i)->owner = x;
            if (detours_path)
                segkeys[i - seg_base] = key_of(x);
        }
}

static void push(struct cpustate *c, uint8_t kind, int64_t key, int64_t t, uint32_t name,
                 uint32_t detail, int32_t pid)
{
    flush(c, t);
    if (c->n == MAXSTACK) { /* runaway nesting means lost exits: drop the oldest context */
        close_frames(c, 1, t, JS_CLIPPED_END);
        c->truncated++;
    }
    uint32_t a = new_act(c->cpu, kind, t, name, detail, pid, c->n, 0);
    c->st[c->n++] = (struct frame){a, kind, key};
}

static void pop_match(struct cpustate *c, uint8_t kind, int64_t key, int64_t t, uint32_t name,
                      uint32_t detail, int32_t pid)
{
    for (int i = c->n - 1; i >= 1; i--)
        if (c->st[i].kind == kind && c->st[i].key == key) {
            flush(c, t);
            close_frames(c, i + 1, t, JS_CLIPPED_END);
            close_frames(c, i, t, 0);
            return;
        }
    if (!c->switch_seen && !c->settled)
        retro_open(c, kind, name, detail, t, pid);
    else
        c->unmatched++;
}

static void ann_open(struct cpustate *c, uint8_t kind, uint64_t key, int64_t t, uint32_t name,
                     uint32_t detail, int32_t pid)
{
    if (c->nan == MAXANN) {
        c->nan--;
        A(c->an[c->nan].act)->end_tsc = t;
        A(c->an[c->nan].act)->flags |= JS_CLIPPED_END;
        c->truncated++;
    }
    uint32_t a = new_act(c->cpu, kind, t, name, detail, pid, c->n, 0);
    c->an[c->nan++] = (struct ann){a, kind, key, c->n - 1};
}

static void ann_close(struct cpustate *c, uint8_t kind, uint64_t key, int64_t t, uint32_t detail,
                      int32_t pid)
{
    for (int i = c->nan - 1; i >= 0; i--)
        if (c->an[i].kind == kind && c->an[i].key == key) {
            for (int k = c->nan - 1; k > i; k--) {
                A(c->an[k].act)->end_tsc = t;
                A(c->an[k].act)->flags |= JS_CLIPPED_END;
            }
            A(c->an[i].act)->end_tsc = t;
            c->nan = i;
            return;
        }
    if (!c->switch_seen && !c->settled) {
        /* the callback/item started before the capture; its name is unknown */
        char b[40];
        int n = snprintf(b, sizeof b, "0x%" PRIx64, key);
        uint32_t a = new_act(c->cpu, kind, c->span_start, intern_n(b, (size_t)n), detail, pid, c->n,
                             JS_CLIPPED_START);
        A(a)->end_tsc = t;
        (void)a;
    } else {
        c->unmatched++;
    }
}

/* A kworker switched out mid-item: close its piece, resume it when it returns. */
static void suspend_work(struct cpustate *c, int64_t t)
{
    int32_t pid = A(c->st[0].act)->pid;
    for (int i = c->nan - 1; i >= 0; i--) {
        struct ann *a = &c->an[i];
        A(a->act)->end_tsc = t;
        if (a->kind != JS_KIND_WORK || a->level != 0) {
            A(a->act)->flags |= JS_CLIPPED_END;
            continue;
        }
        int slot = 0;
        for (int k = 0; k < MAXSUSP; k++)
            if (!c->su[k].valid) { slot = k; break; }
        c->su[slot] = (struct susp){pid, A(a->act)->name, A(a->act)->detail, a->key, 1};
    }
    c->nan = 0;
}

/* ---- decoding ------------------------------------------------------------- */
static inline uint64_t rd(const uint8_t *p, int size)
{
    switch (size) {
    case 1: return *p;
    case 2: { uint16_t v; memcpy(&v, p, 2); return v; }
    case 4: { uint32_t v; memcpy(&v, p, 4); return v; }
    default: { uint64_t v; memcpy(&v, p, 8); return v; }
    }
}

static inline int64_t rds(const uint8_t *p, int size)
{
    switch (size) {
    case 1: return (int8_t)*p;
    case 2: { int16_t v; memcpy(&v, p, 2); return v; }
    case 4: { int32_t v; memcpy(&v, p, 4); return v; }
    default: { int64_t v; memcpy(&v, p, 8); return v; }
    }
}

/* int64 arithmetic that wraps: ring-buffer times are u64, and a corrupt capture's can be anything (numpy's
 * int64 arithmetic, which the --detours attribution matches, wraps too) */
static inline int64_t wrap_sub(int64_t a, int64_t b) { return (int64_t)((uint64_t)a - (uint64_t)b); }
static inline int64_t wrap_add(int64_t a, int64_t b) { return (int64_t)((uint64_t)a + (uint64_t)b); }

/* --events: each decoded event as the state machine gets it (strings escaped so a line stays one line). */
static FILE *events_out;

static void put_escaped(const char *s, size_t n)
{
    for (size_t i = 0; i < n && s[i]; i++) {
        unsigned char ch = (unsigned char)s[i];
        if (ch == '\\' || ch == '\t' || ch == '\n' || ch < 32)
            fprintf(events_out, "\\x%02x", ch);
        else
            fputc(ch, events_out);
    }
}

static void dump_event(int cpu, int64_t t, uint16_t type, const struct evdef *e, const uint8_t *d, uint32_t len)
{
    fprintf(events_out, "%d\t%" PRId64 "\t%u\tcommon_pid=%d", cpu, t, type, (int32_t)rds(d + pid_off, 4));
    for (int i = 0; i < MAXF; i++) {
        const char *name = i == SWITCH_PREV_STATE && e->role == R_SWITCH ? "prev_state" : field_names[e->role][i];
        const struct field *f = &e->f[i];
        if (!name || f->off < 0)
            continue;
        fprintf(events_out, "\t%s=", name);
        if (e->role == R_SWITCH && (i == 0 || i == 2)) {          /* char prev_comm[16], next_comm[16] */
            put_escaped((const char *)d + f->off, (size_t)f->size);
        } else if (e->role == R_IRQ_ENTRY && i == 1) {           /* __data_loc char[] name */
            uint32_t loc = (uint32_t)rd(d + f->off, 4), off = loc & 0xffff, n = loc >> 16;
            if (off + n <= len)
                put_escaped((const char *)d + off, n);
        } else if (e->role == R_PRINT) {                         /* char buf[]: the rest of the record */
            if (len > (uint32_t)f->off)
                put_escaped((const char *)d + f->off, len - (uint32_t)f->off);
        } else {
            fprintf(events_out, "%" PRIu64, rd(d + f->off, f->size));
        }
    }
    fputc('\n', events_out);
}

struct marker { int cpu; int64_t tsc; char text[96]; };
static struct marker markers[64];
static int nmarkers;

/* A task's comm as the record holds it (TASK_COMM_LEN bytes), interned.  Two per context switch, nearly
 * always one of a few: a direct-mapped cache on the field's 16 bytes spares the hash and compare of the
 * string (interning was a fifth of a scan).  The key is every byte of the field, so a hit is the same
 * string, whatever follows its NUL. */
#define COMM_CACHE 256
static struct { uint64_t lo, hi; uint32_t id; uint8_t used; } comm_cache[COMM_CACHE];

static uint32_t comm_str(const uint8_t *p, int size)
{
    if (size == 16) {
        uint64_t lo, hi;
        memcpy(&lo, p, 8);
        memcpy(&hi, p + 8, 8);
        size_t h = (size_t)(((lo ^ (hi * 0x9E3779B97F4A7C15ull)) * 0xC2B2AE3D27D4EB4Full) >> 56) & (COMM_CACHE - 1);
        if (comm_cache[h].used && comm_cache[h].lo == lo && comm_cache[h].hi == hi)
            return comm_cache[h].id;
        uint32_t id = intern_n((const char *)p, strnlen((const char *)p, 16));
        comm_cache[h].lo = lo;
        comm_cache[h].hi = hi;
        comm_cache[h].id = id;
        comm_cache[h].used = 1;
        return id;
    }
    size_t n = strnlen((const char *)p, (size_t)size);
    return intern_n((const char *)p, n);
}

/* sched_switch: the thread slice ends (and every context left open on it: their exits were
 * lost), the next one begins; a thread switched out runnable was preempted. */
static void on_switch(struct cpustate *c, int64_t t, const uint8_t *d, const struct evdef *e)
{
    int32_t prev = (int32_t)rds(d + e->f[1].off, 4), next = (int32_t)rds(d + e->f[3].off, 4);
    flush(c, t);
    if (c->base_unnamed && A(c->st[0].act)->pid == prev) {
        A(c->st[0].act)->name = comm_str(d + e->f[0].off, e->f[0].size);
        c->base_unnamed = 0;
    }
    close_frames(c, 1, t, JS_CLIPPED_END); /* contexts left open: exits lost */
    suspend_work(c, t);
    /* Runnable when switched out (state 0, or TASK_REPORT_MAX: "R+", preempted): it lost
     * the CPU rather than blocking.  The report states are the bits below TASK_REPORT_MAX. */
    if (e->f[SWITCH_PREV_STATE].off >= 0 && prev != 0) {
        uint64_t st = rd(d + e->f[SWITCH_PREV_STATE].off, e->f[SWITCH_PREV_STATE].size);
        if ((st & 0xff) == 0)
            A(c->st[0].act)->flags |= JS_PREEMPTED;
    }
    close_frames(c, 0, t, 0);
    open_thread(c, t, next == 0 ? swapper_name(c->cpu) : comm_str(d + e->f[2].off, e->f[2].size), next, 0);
    c->switch_seen = 1;
}

/* An event whose task is not the thread we believe runs proves a switch the kernel did not record
 * (on a 6.18 guest most switches out of idle are missing, and the ring buffer counts none of them as
 * lost).  The new thread starts here, the latest the switch can have been; its comm comes from its
 * next sched_switch, else comms.txt. */
static void missed_switch(struct cpustate *c, int64_t t, int32_t pid)
{
    flush(c, t);
    close_frames(c, 1, t, JS_CLIPPED_END);
    suspend_work(c, t);
    close_frames(c, 0, t, JS_CLIPPED_END);
    open_thread(c, t, pid == 0 ? swapper_name(c->cpu) : S_EMPTY, pid, JS_CLIPPED_START);
    if (pid != 0) {
        c->base_unnamed = 1;
        mark_unnamed(c->st[0].act);
    }
    c->switch_seen = 1;
    c->missed_switches++;
}

static void on_irq(struct cpustate *c, int64_t t, const uint8_t *d, uint32_t len, const struct evdef *e,
                   int32_t pid)
{
    int64_t irq = rds(d + e->f[0].off, e->f[0].size);
    if (e->role == R_IRQ_EXIT) {
        char b[32];
        snprintf(b, sizeof b, "irq%lld", (long long)irq);
        pop_match(c, JS_KIND_IRQ, irq, t, intern(b), intern_int(irq), pid);
        return;
    }
    uint32_t loc = (uint32_t)rd(d + e->f[1].off, 4); /* __data_loc: len << 16 | offset */
    uint32_t off = loc & 0xffff, n = loc >> 16;
    uint32_t name = (off + n <= len) ? intern_n((const char *)d + off, strnlen((const char *)d + off, n))
                                     : intern("irq");
    push(c, JS_KIND_IRQ, irq, t, name, intern_int(irq), pid);
}

/* x86 vector entry/exit (local_timer, reschedule, ...): keyed by label so entry and exit of one
 * vector match; never equal to an irq number. */
static void on_vector(struct cpustate *c, int64_t t, const uint8_t *d, const struct evdef *e, int32_t pid)
{
    int64_t key = -1 - (int64_t)e->label;
    uint32_t detail = intern_int(e->vector >= 0 ? e->vector : rds(d + e->f[0].off, e->f[0].size));
    if (e->role == R_VEC_ENTRY)
        push(c, JS_KIND_IRQ, key, t, e->label, detail, pid);
    else
        pop_match(c, JS_KIND_IRQ, key, t, e->label, detail, pid);
}

static void on_softirq(struct cpustate *c, int64_t t, const uint8_t *d, const struct evdef *e, int32_t pid)
{
    uint32_t vec = (uint32_t)rd(d + e->f[0].off, e->f[0].size);
    uint32_t name;
    if (vec < (uint32_t)n_softirq_names) {
        name = softirq_name[vec];
    } else {
        char b[32];
        snprintf(b, sizeof b, "softirq%u", vec);
        name = intern(b);
    }
    if (e->role == R_SOFTIRQ_ENTRY)
        push(c, JS_KIND_SOFTIRQ, vec, t, name, intern_int(vec), pid);
    else
        pop_match(c, JS_KIND_SOFTIRQ, vec, t, name, intern_int(vec), pid);
}

/* nmi_handler is logged at the end with its length: placed after the fact as [t - delta, t]. */
static void on_nmi(struct cpustate *c, int64_t t, const uint8_t *d, const struct evdef *e, int32_t pid)
{
    uint64_t handler = rd(d + e->f[0].off, e->f[0].size);
    int64_t delta_ns = rds(d + e->f[1].off, e->f[1].size);
    int64_t a = t - (int64_t)((double)delta_ns * tsc_per_ns + 0.5);
    if (a < c->seg_start)
        a = c->seg_start;
    flush(c, a);
    uint32_t x = new_act(c->cpu, JS_KIND_NMI, a, func_name(handler), S_EMPTY, pid, c->n, 0);
    A(x)->end_tsc = t;
    emit_seg(c->cpu, a, t, x);
    if (t > c->seg_start)
        c->seg_start = t;
}

/* Work items and timer callbacks: annotations, opened and closed by their pointer. */
static void on_annotation(struct cpustate *c, int64_t t, const uint8_t *d, const struct evdef *e, int32_t pid)
{
    int kind = e->role == R_WORK_START || e->role == R_WORK_END ? JS_KIND_WORK : JS_KIND_TIMER;
    uint32_t detail = e->role == R_HRT_ENTRY || e->role == R_HRT_EXIT ? S_HRTIMER
                    : e->role == R_TMR_ENTRY || e->role == R_TMR_EXIT ? S_TIMER : S_EMPTY;
    uint64_t key = rd(d + e->f[0].off, e->f[0].size);
    if (e->role == R_WORK_START || e->role == R_HRT_ENTRY || e->role == R_TMR_ENTRY)
        ann_open(c, kind, key, t, func_name(rd(d + e->f[1].off, e->f[1].size)), detail, pid);
    else
        ann_close(c, kind, key, t, detail, pid);
}

/* A trace_marker write: jitterscope's own start/stop markers are kept (text made JSON-safe). */
static void on_marker(struct cpustate *c, int64_t t, const uint8_t *d, uint32_t len, const struct evdef *e)
{
    const char *s = (const char *)d + e->f[0].off;
    size_t n = len > (uint32_t)e->f[0].off ? strnlen(s, len - (uint32_t)e->f[0].off) : 0;
    if (n < 12 || strncmp(s, "jitterscope-", 12) || nmarkers >= 64)
        return;
    struct marker *m = &markers[nmarkers++];
    m->cpu = c->cpu;
    m->tsc = t;
    if (n >= sizeof m->text)
        n = sizeof m->text - 1;
    memcpy(m->text, s, n);
    m->text[n] = 0;
    for (char *q = m->text; *q; q++)
        if (*q == '"' || *q == '\\' || (unsigned char)*q < 32)
            *q = ' ';
}

/* The pids to look up in /proc (counts.json): a parse's unnamed placeholders, a scan's each once. */
static int32_t *unknown;
static size_t nunknown, unknown_cap;

static void unknown_add(int32_t pid)
{
    if (nunknown == unknown_cap)
        unknown = js_realloc(unknown, (unknown_cap = unknown_cap ? unknown_cap * 2 : 64) * sizeof *unknown);
    unknown[nunknown++] = pid;
}

static struct keyset listed_pids;

/* A pid to look up, listed once: only a real one (a corrupt record's pid 0 or below names no process). */
static void unknown_once(int32_t pid)
{
    if (pid > 0 && keyset_add(&listed_pids, (uint64_t)pid))
        unknown_add(pid);
}

/* --scan: what the session needs of a capture before it is parsed (each CPU's events and last event, the
 * markers, the function addresses to name, the pids whose comm may be needed), without the stack machine,
 * which was most of a scan's time.  A thread the parse cannot name from the trace is one it finds running
 * without the sched_switch that began its slice (at a CPU's first event, after lost pages, at a missed
 * switch) and whose slice no sched_switch ends: every thread found running so is listed (a superset: the
 * parse looks up only the ones it needs). */
static void scan_event(struct cpustate *c, int64_t t, const uint8_t *d, uint32_t len, const struct evdef *e,
                       int32_t pid)
{
    c->last_ts = t;
    if (e->role == R_SWITCH) { /* its prev is named by its prev_comm, unless that is empty */
        if (d[e->f[0].off] == 0)
            unknown_once((int32_t)rds(d + e->f[1].off, 4));
        c->scan_cur = (int32_t)rds(d + e->f[3].off, 4);
        c->scan_known = 1;
        return;
    }
    if (!c->scan_known || c->scan_cur != pid)
        unknown_once(pid);
    c->scan_cur = pid;
    c->scan_known = 1;
    switch (e->role) {
    case R_NMI: addr_add(rd(d + e->f[0].off, e->f[0].size)); break;
    case R_WORK_START:
    case R_HRT_ENTRY:
    case R_TMR_ENTRY: addr_add(rd(d + e->f[1].off, e->f[1].size)); break;
    case R_PRINT: on_marker(c, t, d, len, e); break;
    default: break;
    }
}

static void handle_event(struct cpustate *c, int64_t t, const uint8_t *d, uint32_t len)
{
    if (len < 8)
        return;
    uint16_t type = (uint16_t)rd(d, 2);
    const struct evdef *e = &events[type];
    if (e->role == R_NONE)
        return;
    int32_t pid = (int32_t)rds(d + pid_off, 4);
    c->nevents++;
    if (events_out)
        dump_event(c->cpu, t, type, e, d, len);
    if (scan_only) {
        scan_event(c, t, d, len, e, pid);
        return;
    }
    int32_t running = e->role == R_SWITCH ? (int32_t)rds(d + e->f[1].off, 4) : pid; /* switch: its prev */
    if (!c->open)
        span_open(c, c->pending_start < t ? c->pending_start : t, running);
    c->last_ts = t;
    if (A(c->st[0].act)->pid != running)
        missed_switch(c, t, running);
    switch (e->role) {
    case R_SWITCH: on_switch(c, t, d, e); break;
    case R_IRQ_ENTRY:
    case R_IRQ_EXIT: on_irq(c, t, d, len, e, pid); break;
    case R_VEC_ENTRY:
    case R_VEC_EXIT: on_vector(c, t, d, e, pid); break;
    case R_SOFTIRQ_ENTRY:
    case R_SOFTIRQ_EXIT: on_softirq(c, t, d, e, pid); break;
    case R_NMI: on_nmi(c, t, d, e, pid); break;
    case R_WORK_START:
    case R_WORK_END:
    case R_HRT_ENTRY:
    case R_HRT_EXIT:
    case R_TMR_ENTRY:
    case R_TMR_EXIT: on_annotation(c, t, d, e, pid); break;
    case R_PRINT: on_marker(c, t, d, len, e); break;
    }
}

/* Walk one page's events. */
/* A page's header: its committed size (0: nothing to read) and its first timestamp in *ts; events lost
 * before the page close the open span, since what ran in the gap is unknown. */
static uint64_t begin_page(struct cpustate *c, const uint8_t *page, size_t page_size, int64_t *ts_out)
{
    uint64_t commit = rd(page + pg_commit_off, pg_commit_size);
    uint64_t size = commit & RB_COMMIT_MASK;
    int64_t ts = (int64_t)rd(page + pg_ts_off, pg_ts_size);
    const uint8_t *data = page + pg_data_off;
    size_t data_cap = page_size - (size_t)pg_data_off;
    if (size > data_cap)
        size = data_cap; /* corrupt header: read what fits */
    if (size == 0 && !(commit & RB_MISSED_EVENTS))
        return 0;
    if (c->last_ts != INT64_MIN && ts < c->last_ts)
        ts = c->last_ts; /* never let time run backwards, not even across lost events: segments stay sorted */
    c->pages++;
    if (commit & RB_MISSED_EVENTS) {
        /* events were lost before this page: what ran in the gap is unknown */
        c->missed_pages++;
        c->scan_known = 0; /* whoever runs after the gap is not known from before it */
        if ((commit & RB_MISSED_STORED) && size + (size_t)pg_commit_size <= data_cap)
            c->missed_stored += rd(data + size, pg_commit_size);
        else
            c->missed_unknown++;
        if (c->open)
            span_close(c, c->last_ts);
        c->pending_start = ts;
    } else if (c->first_ts == INT64_MIN) {
        c->pending_start = (window_start != INT64_MIN && window_start < ts) ? window_start : ts;
    } else if (!c->open) {
        c->pending_start = ts;
    }
    if (c->first_ts == INT64_MIN)
        c->first_ts = ts;
    *ts_out = ts;
    return size;
}

static void parse_page(struct cpustate *c, const uint8_t *page, size_t page_size)
{
    int64_t ts = 0;
    uint64_t size = begin_page(c, page, page_size, &ts);
    const uint8_t *data = page + pg_data_off;
    size_t off = 0;
    while (off + 4 <= size) {
        uint32_t hdr = (uint32_t)rd(data + off, 4);
        uint32_t type_len = hdr & 31, delta = hdr >> 5;
        uint32_t len;
        const uint8_t *ev;
        switch (type_len) {
        case RB_PADDING:
            if (delta == 0)
                return; /* the rest of the page is empty */
            if (off + 8 > size)
                return;
            len = (uint32_t)rd(data + off + 4, 4);
            off += 4 + ((len + 3) & ~3u);
            continue; /* a discarded event: the kernel's reader ignores its delta too */
        case RB_TIME_EXTEND:
            if (off + 8 > size)
                return;
            ts = wrap_add(ts, (int64_t)(((uint64_t)rd(data + off + 4, 4) << TS_SHIFT) | delta));
            off += 8;
            continue;
        case RB_TIME_STAMP: {
            if (off + 8 > size)
                return;
            uint64_t abs = ((uint64_t)rd(data + off + 4, 4) << TS_SHIFT) | delta;
            uint64_t cur = (uint64_t)ts;
            if (cur & TS_MSB) { /* only the low 59 bits are stored */
                abs |= cur & TS_MSB;
                if (abs < cur)
                    abs += 1ull << 59;
            }
            ts = (int64_t)abs;
            off += 8;
            continue;
        }
        case 0:
            if (off + 8 > size)
                return;
            len = (uint32_t)rd(data + off + 4, 4);
            if (len < 4 || off + 4 + len > size)
                return;
            ev = data + off + 8;
            ts = wrap_add(ts, delta);
            off += 4 + ((len + 3) & ~3u);
            len -= 4;
            break;
        default:
            len = type_len * 4;
            if (off + 4 + len > size)
                return;
            ev = data + off + 4;
            ts = wrap_add(ts, delta);
            off += 4 + len;
            break;
        }
        /* a scan has no span open, but holds time as a parse does where one would be (scan_known) */
        if ((c->open || (scan_only && c->scan_known)) && ts < c->last_ts)
            ts = c->last_ts;
        handle_event(c, ts, ev, len);
    }
}

static int cmp_int(const void *a, const void *b) { return *(const int *)a - *(const int *)b; }

static void write_file(const char *dir, const char *name, const void *p, size_t n)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    if (!f)
        die("%s: %s", path, strerror(errno));
    if (n && fwrite(p, 1, n, f) != n)
        die("%s: write failed", path);
    if (fclose(f))
        die("%s: %s", path, strerror(errno));
}

/* ---- --detours: the overlaps of detours with segments, in ns since t0 ------------------------ */
static int64_t t0_tsc;
static double ns_per_tick;
static int64_t (*dets)[2]; /* the detours, (start, end) in ns since t0 */
static size_t ndets, next_det;
static FILE *pieces_out, *containers_out;

/* measure/tsc.py since_ns: the difference in ticks (int64, wrapping as numpy's does) as a double,
 * times K, rounded half to even (np.round; rint in the default rounding mode) */
static inline int64_t since_ns(int64_t tsc)
{
    double ns = rint((double)(int64_t)((uint64_t)tsc - (uint64_t)t0_tsc) * ns_per_tick);
    if (!(ns >= -0x1p63 && ns < 0x1p63))
        return INT64_MIN; /* out of range (a corrupt page's time): what numpy's cast gives on x86 */
    return (int64_t)ns;
}

/* numpy's searchsorted on the segments in memory: their ends (side right) and starts (side left) */
static size_t first_end_after(int64_t a)
{
    size_t lo = seg_base, hi = nsegs;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (since_ns(seg(mid)->end_tsc) <= a)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static size_t first_start_from(int64_t b, int right)
{
    size_t lo = seg_base, hi = nsegs;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int64_t s = since_ns(seg(mid)->start_tsc);
        if (s < b || (right && s == b))
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static int create_out(const char *dir, const char *name)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0)
        die("%s: %s", path, strerror(errno));
    return fd;
}

static FILE *open_out(const char *dir, const char *name)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    if (!f)
        die("%s: %s", path, strerror(errno));
    return f;
}

static void close_out(FILE *f, const char *name)
{
    if (ferror(f) | fclose(f))
        die("%s: write failed", name);
}

/* One detour's pieces, summed per owner of one (kind, name, pid): the analysis names and codes
 * a source from those three alone, so their sums are pieces of one source (summed again there).
 * An owner whose name was not known yet when its segment was emitted is summed alone: it may be
 * named otherwise than another unnamed one of its pid, and a split sum is summed again anyway. */
#define MAXDSUM 64 /* owners summed apart at once: a detour over more is written in several sums */
static struct js_piece dsum[MAXDSUM];
static struct segkey dkey[MAXDSUM];
static size_t ndsum;

static void write_dsum(void)
{
    if (ndsum && fwrite(dsum, sizeof *dsum, ndsum, pieces_out) != ndsum)
        die("pieces.bin: write failed");
    ndsum = 0;
}

static void add_piece(int64_t detour, int64_t ov, int64_t start, uint32_t owner, struct segkey k)
{
    for (size_t i = 0; i < ndsum; i++)
        if (dsum[i].owner == owner ||
            (k.name != S_EMPTY && dkey[i].kind == k.kind && dkey[i].name == k.name && dkey[i].pid == k.pid)) {
            dsum[i].ns = wrap_add(dsum[i].ns, ov); /* pieces come in time order: the first start is the earliest */
            return;
        }
    if (ndsum == MAXDSUM)
        write_dsum();
    dkey[ndsum] = k;
    dsum[ndsum++] = (struct js_piece){detour, ov, start, owner, 0};
}

/* detours.bin, read as the attribution reaches it: dets[] holds detours det_base..det_base+ndets-1 (16
 * bytes each, a few per second of the run, but a long run has millions). */
static FILE *detours_in;
static size_t det_base, detcap;
static int64_t last_d0 = INT64_MIN;

/* Whether detour i is there to attribute (reading more of the file when needed). */
static int have_detour(size_t i)
{
    if (i < det_base + ndets)
        return 1;
    if (!detours_in)
        return 0;
    det_base += ndets; /* every detour read so far is done: only the next ones are needed */
    ndets = fread(dets, sizeof *dets, detcap, detours_in);
    if (ferror(detours_in))
        die("%s: read failed", detours_path);
    for (size_t k = 0; k < ndets; k++) {
        if (dets[k][0] < last_d0)
            die("%s: detours not sorted by start", detours_path);
        last_d0 = dets[k][0];
    }
    if (ndets < detcap) {
        fclose(detours_in);
        detours_in = NULL;
    }
    return i < det_base + ndets;
}

static void load_detours(const char *out)
{
    detours_in = fopen(detours_path, "rb");
    if (!detours_in)
        die("%s: %s", detours_path, strerror(errno));
    dets = js_malloc((detcap = 4096) * sizeof *dets);
    pieces_out = open_out(out, "pieces.bin");
    containers_out = open_out(out, "containers.bin");
}

#define DET(i) dets[(i) - det_base]

/* Work/timer rows whose container is still to be found, in row order: their index and start (ns). */
static struct pend { size_t row; int64_t start; } *pend;
static size_t npend, pendcap;

static void note_annotation(size_t row, int64_t start_tsc)
{
    if (npend == pendcap)
        pend = js_realloc(pend, (pendcap = pendcap ? pendcap * 2 : 1024) * sizeof *pend);
    pend[npend++] = (struct pend){row, since_ns(start_tsc)};
}

/* pieces.bin and containers.bin (trace_records.h): attribution.overlaps of the detours with the
 * segments, the same pairs whatever order numpy found them in (summed per detour and owner's
 * kind, name and pid), and each annotation's container (the owner of the last segment starting at or
 * before it), in detour and row order.  While parsing (`at_end` 0) a detour or an annotation is done
 * once a segment starting after it has been emitted and the segments before that one are settled
 * (below `settled`: retro_open changes no owner there); then the segments that no detour or annotation
 * still needs are dropped, but for the last, which may still grow. */
static void attribute(size_t settled, int at_end)
{
    for (; have_detour(next_det); next_det++) {
        int64_t d0 = DET(next_det)[0], d1 = DET(next_det)[1];
        size_t j = first_end_after(d0), hi = first_start_from(d1, 0);
        if (!at_end && (hi == nsegs || hi > settled))
            break;
        for (; j < hi; j++) {
            int64_t s = since_ns(seg(j)->start_tsc), e = since_ns(seg(j)->end_tsc);
            int64_t start = s > d0 ? s : d0;
            int64_t ov = wrap_sub(e < d1 ? e : d1, start);
            if (ov > 0)
                add_piece((int64_t)next_det, ov, start, seg(j)->owner, segkeys[j - seg_base]);
        }
        write_dsum();
    }
    size_t done = 0;
    for (; done < npend; done++) {
        size_t k = first_start_from(pend[done].start, 1);
        if (!at_end && (k == nsegs || k > settled))
            break;
        if (k == seg_base && seg_base > 0)
            die("internal error: the container of row %zu was dropped", pend[done].row);
        uint32_t owner = k > seg_base ? seg(k - 1)->owner : JS_NO_CONTAINER;
        if (fwrite(&owner, sizeof owner, 1, containers_out) != 1)
            die("containers.bin: write failed");
    }
    if (done) {
        memmove(pend, pend + done, (npend - done) * sizeof *pend);
        npend -= done;
    }
    if (at_end || nsegs == seg_base)
        return;
    size_t keep = settled < nsegs - 1 ? settled : nsegs - 1;
    if (have_detour(next_det)) {
        size_t j = first_end_after(DET(next_det)[0]);
        keep = j < keep ? j : keep;
    }
    for (size_t i = 0; i < npend; i++) {
        size_t k = first_start_from(pend[i].start, 1);
        k = k > seg_base ? k - 1 : seg_base;
        keep = k < keep ? k : keep;
    }
    if (keep > seg_base) {
        memmove(segs, segs + (keep - seg_base), (nsegs - keep) * sizeof *segs);
        memmove(segkeys, segkeys + (keep - seg_base), (nsegs - keep) * sizeof *segkeys);
        seg_base = keep;
    }
}

static void print_layout(void)
{
#define F(s, m) printf("\"%s\": [%zu, %zu]", #m, offsetof(struct s, m), sizeof(((struct s *)0)->m))
    printf("{\"js_activity\": {\"size\": %zu, \"fields\": {", sizeof(struct js_activity));
    F(js_activity, start_tsc); printf(", "); F(js_activity, end_tsc); printf(", ");
    F(js_activity, cpu); printf(", "); F(js_activity, pid); printf(", ");
    F(js_activity, name); printf(", "); F(js_activity, detail); printf(", ");
    F(js_activity, depth); printf(", "); F(js_activity, kind); printf(", ");
    F(js_activity, flags); printf(", "); F(js_activity, reserved);
    printf("}}, \"js_segment\": {\"size\": %zu, \"fields\": {", sizeof(struct js_segment));
    F(js_segment, start_tsc); printf(", "); F(js_segment, end_tsc); printf(", ");
    F(js_segment, cpu); printf(", "); F(js_segment, owner);
    printf("}}, \"js_piece\": {\"size\": %zu, \"fields\": {", sizeof(struct js_piece));
    F(js_piece, detour); printf(", "); F(js_piece, ns); printf(", ");
    F(js_piece, start_ns); printf(", "); F(js_piece, owner); printf(", "); F(js_piece, reserved);
    printf("}}, \"no_container\": %u, \"kinds\": {\"thread\": %d, \"irq\": %d, \"softirq\": %d, \"nmi\": %d, \"work\": %d, "
           "\"timer\": %d}, \"flags\": {\"clipped_start\": %u, \"clipped_end\": %u}}\n",
           JS_NO_CONTAINER, JS_KIND_THREAD, JS_KIND_IRQ, JS_KIND_SOFTIRQ, JS_KIND_NMI, JS_KIND_WORK, JS_KIND_TIMER,
           JS_CLIPPED_START, JS_CLIPPED_END);
#undef F
}

static void usage(void)
{
    fputs("usage: jitterscope-traceparse [--scan] [--tsc-hz HZ] [--window START END [--open-end]] [--cpu N]\n"
          "                              [--events FILE]\n"
          "                              [--detours FILE --t0 TSC --ns-per-tick K] [--spill ROWS] TRACE_DIR OUT_DIR\n"
          "       jitterscope-traceparse --layout\n", stderr);
    exit(2);
}

/* --cpu N: parse that CPU's capture alone, so CPUs can be analysed by parallel processes. */
static int only_cpu = -1;

/* Options into the parser's globals; the input and output directories into *in, *out. */

static void parse_args(int argc, char **argv, const char **in, const char **out)
{
    double tsc_hz = 0;
    *in = *out = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--layout")) {
            print_layout();
            exit(0);
        } else if (!strcmp(argv[i], "--events") && i + 1 < argc) {
            events_out = fopen(argv[++i], "w");
            if (!events_out)
                die("%s: %s", argv[i], strerror(errno));
        } else if (!strcmp(argv[i], "--spill") && i + 1 < argc) {
            char *end;
            const char *v = argv[++i];
            spill_rows = strtoull(v, &end, 10);
            if (*v < '0' || *v > '9' || *end || spill_rows < 1) /* a count: no sign, no unit */
                usage();
        } else if (!strcmp(argv[i], "--scan")) {
            scan_only = 1;
        } else if (!strcmp(argv[i], "--open-end")) {
            open_end = 1;
        } else if (!strcmp(argv[i], "--tsc-hz") && i + 1 < argc) {
            tsc_hz = atof(argv[++i]);
        } else if (!strcmp(argv[i], "--cpu") && i + 1 < argc) {
            only_cpu = atoi(argv[++i]);
        } else if (!strcmp(argv[i], "--detours") && i + 1 < argc) {
            detours_path = argv[++i];
        } else if (!strcmp(argv[i], "--t0") && i + 1 < argc) {
            t0_tsc = strtoll(argv[++i], NULL, 10);
        } else if (!strcmp(argv[i], "--ns-per-tick") && i + 1 < argc) {
            ns_per_tick = strtod(argv[++i], NULL);
        } else if (!strcmp(argv[i], "--window") && i + 2 < argc) {
            window_start = strtoll(argv[++i], NULL, 10);
            window_end = strtoll(argv[++i], NULL, 10);
        } else if (argv[i][0] == '-') {
            usage();
        } else if (!*in) {
            *in = argv[i];
        } else if (!*out) {
            *out = argv[i];
        } else {
            usage();
        }
    }
    if (!*in || !*out)
        usage();
    if (detours_path && (only_cpu < 0 || scan_only || !(ns_per_tick > 0)))
        usage(); /* one CPU's detours, its segments in memory, a clock to put them in ns */
    /* Without a measured TSC rate NMI lengths (given in ns) are taken as ticks:
     * only their duration is affected, never which context owns the time. */
    tsc_per_ns = tsc_hz > 0 ? tsc_hz / 1e9 : 1.0;
}

/* The CPUs with a cpuN.raw file in the trace directory, ascending. */
static int list_cpus(const char *in, int *cpus, int max)
{
    DIR *dir = opendir(in);
    if (!dir)
        die("%s: %s", in, strerror(errno));
    int ncpus = 0;
    struct dirent *de;
    while ((de = readdir(dir)) && ncpus < max) {
        int cpu;
        char tail[8];
        if (sscanf(de->d_name, "cpu%d.ra%1s", &cpu, tail) == 2 && strlen(de->d_name) > 7 &&
            !strcmp(de->d_name + strlen(de->d_name) - 4, ".raw"))
            cpus[ncpus++] = cpu;
    }
    closedir(dir);
    qsort(cpus, (size_t)ncpus, sizeof *cpus, cmp_int);
    return ncpus;
}

/* The name of a thread whose comm never showed in a sched_switch: comms.txt, else "pid N" (its pid kept
 * in `unknown`, for jitterscope to look up while the process may still exist).  Given at the end
 * (name_unknown_threads) to every placeholder that the sched_switch ending its slice did not name. */
static uint32_t fallback_name(int32_t pid)
{
    for (size_t k = 0; k < ncomms; k++)
        if (comms[k].pid == pid) {
            if (!comms[k].interned) {
                comms[k].name = intern(comms[k].text);
                comms[k].interned = 1;
            }
            return comms[k].name;
        }
    char b[32];
    snprintf(b, sizeof b, "pid %d", pid);
    unknown_add(pid);
    return intern(b);
}

/* ---- spilling: what the parser holds stays bounded, whatever the run's length --------------- */
static struct cpustate *states;
static int nstates;
static int seg_fd = -1; /* segments.bin, without --detours and outside a scan */

static void write_at(int fd, const char *what, size_t offset, const void *p, size_t n)
{
    const char *b = p;
    while (n) {
        ssize_t w = pwrite(fd, b, n, (off_t)offset);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            die("%s: %s", what, w < 0 ? strerror(errno) : "write failed");
        b += w, n -= (size_t)w, offset += (size_t)w;
    }
}

static void write_rows(size_t first, const struct js_activity *p, size_t n)
{
    if (act_fd >= 0)
        write_at(act_fd, "activity.bin", first * sizeof *p, p, n * sizeof *p);
}

static void write_segs(size_t upto)
{
    if (seg_fd >= 0 && upto > seg_base)
        write_at(seg_fd, "segments.bin", seg_base * sizeof *segs, segs, (upto - seg_base) * sizeof *segs);
}

/* The records open now on any CPU: its thread slice and contexts, and its annotations. */
static size_t open_rows(size_t *out)
{
    size_t n = 0;
    for (int k = 0; k < nstates; k++) {
        const struct cpustate *c = &states[k];
        for (int i = 0; i < c->n; i++)
            out[n++] = c->st[i].act;
        for (int i = 0; i < c->nan; i++)
            out[n++] = c->an[i].act;
    }
    return n;
}

static int among(size_t x, const size_t *v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (v[i] == x)
            return 1;
    return 0;
}

/* Once more than spill_rows records or segments are held: write out all but
 * those a span not yet settled may still revise (retro_open, before its first sched_switch), attribute
 * what can be, and hold the written records still open apart.  The files are the same as if written
 * at the end (pieces.bin may split a sum in two: see add_piece). */
static void spill(void)
{
    if (nacts - act_base < spill_rows && nsegs - seg_base < spill_rows)
        return;
    size_t rows = nacts, sg = nsegs;
    for (int k = 0; k < nstates; k++) {
        struct cpustate *c = &states[k];
        if (!c->open || c->switch_seen || c->settled)
            continue;
        if (nacts - c->span_first_act >= SETTLE_ROWS || nsegs - c->span_first_seg >= SETTLE_ROWS) {
            c->settled = 1;
            continue;
        }
        rows = c->span_first_act < rows ? c->span_first_act : rows;
        sg = c->span_first_seg < sg ? c->span_first_seg : sg;
    }
    if (detours_path) {
        attribute(sg, 0);
    } else if (nsegs > seg_base) {
        size_t upto = sg < nsegs - 1 ? sg : nsegs - 1; /* the last may still grow */
        write_segs(upto);
        memmove(segs, segs + (upto - seg_base), (nsegs - upto) * sizeof *segs);
        seg_base = upto;
    }
    size_t *open = js_malloc(((size_t)nstates * (MAXSTACK + MAXANN) + 1) * sizeof *open);
    size_t nopen = open_rows(open);
    /* the placeholders named by their slice's sched_switch are done; the others are named at the end, in
     * the order they were made (their "pid N" strings interned after every other, as without spills) */
    size_t keep = 0;
    for (size_t i = 0; i < nunnamed; i++) {
        size_t r = unnamed[i].row;
        const struct js_activity *a = r >= act_base ? &acts[r - act_base] : held_find(r);
        if (!(a && r < rows && !among(r, open, nopen) && a->name != S_EMPTY))
            unnamed[keep++] = unnamed[i];
    }
    nunnamed = keep;
    keep = 0;
    for (size_t i = 0; i < nheld; i++) {
        write_rows(held[i].idx, &held[i].a, 1);
        if (among(held[i].idx, open, nopen))
            held[keep++] = held[i];
    }
    nheld = keep;
    write_rows(act_base, acts, rows - act_base);
    for (size_t i = 0; i < nopen; i++)
        if (open[i] >= act_base && open[i] < rows) {
            if (nheld == heldcap)
                held = js_realloc(held, (heldcap = heldcap ? heldcap * 2 : 64) * sizeof *held);
            held[nheld++] = (struct held_act){open[i], acts[open[i] - act_base]};
        }
    free(open);
    memmove(acts, acts + (rows - act_base), (nacts - rows) * sizeof *acts);
    act_base = rows;
}

/* At the end: every record and segment still held, written. */
static void spill_rest(void)
{
    write_rows(act_base, acts, nacts - act_base);
    for (size_t i = 0; i < nheld; i++)
        write_rows(held[i].idx, &held[i].a, 1);
    write_segs(nsegs);
}

/* Every whole page of one CPU's capture through the stack machine (a scan: scan_event); the span still
 * open at the end
 * is cut at the window's end (or the last event). */
static void parse_cpu(struct cpustate *c, const char *in, size_t page_size)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/cpu%d.raw", in, c->cpu);
    int fd = open(path, O_RDONLY);
    if (fd < 0)
        die("%s: %s", path, strerror(errno));
    /* Mapped a window at a time (MAP_POPULATE: its page tables filled in one call, no fault per page),
     * not read(): copying the pages out of the page cache was 0.8 of the 2.2 CPU-seconds a scan of
     * 14 M events took (1.3 mapped, with the comm cache).  Unmapped once parsed, so at most a window of the capture is resident (nothing
     * points into a page once parsed: strings are interned, markers copied).  A partial last page
     * (the capture cut mid-write) is left out, as before. */
    struct stat sb;
    if (fstat(fd, &sb) < 0)
        die("%s: %s", path, strerror(errno));
    const size_t window = page_size * 256; /* 1 MiB of 4 KiB pages: as resident as the read buffer was */
    const size_t sys_page = (size_t)sysconf(_SC_PAGESIZE); /* a mapping starts on one, a trace page need not */
    size_t whole = (size_t)sb.st_size - (size_t)sb.st_size % page_size;
    for (size_t at = 0; at < whole; at += window) {
        size_t len = whole - at < window ? whole - at : window, lead = at % sys_page;
        uint8_t *map = mmap(NULL, lead + len, PROT_READ, MAP_PRIVATE | MAP_POPULATE, fd, (off_t)(at - lead));
        if (map == MAP_FAILED)
            die("%s: %s", path, strerror(errno));
        for (size_t off = 0; off < len; off += page_size) {
            parse_page(c, map + lead + off, page_size);
            spill(); /* a page at a time: what is held stays within a page of spill_rows */
        }
        munmap(map, lead + len);
    }
    close(fd);
    if (c->open)
        span_close(c, window_end > c->last_ts && !open_end ? window_end : c->last_ts);
}

/* Names the placeholders marked so far: a thread's comm is learnt on its own CPU only, so this can run
 * CPU by CPU. */
static void name_unknown_threads(void)
{
    for (size_t i = 0; i < nunnamed; i++) {
        size_t r = unnamed[i].row;
        struct js_activity *a = r >= act_base ? &acts[r - act_base] : held_find(r);
        if (a) {
            if (a->name == S_EMPTY)
                a->name = fallback_name(a->pid);
        } else { /* written out unnamed: its name field, at its row */
            uint32_t name = fallback_name(unnamed[i].pid);
            if (act_fd >= 0)
                write_at(act_fd, "activity.bin", r * sizeof *a + offsetof(struct js_activity, name), &name, sizeof name);
        }
    }
    nunnamed = 0;
}

/* counts.json: per-CPU event, page and loss counts, markers, addresses to symbolize, unknown pids. */
static void write_counts(const char *out, const struct cpustate *states, int ncpus, size_t page_size,
                         size_t nacts_all, size_t nsegs_all)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/counts.json", out);
    FILE *f = fopen(path, "w");
    if (!f)
        die("%s: %s", path, strerror(errno));
    /* a scan runs no stack machine: no activity, segment, unmatched, truncated or missed-switch counts */
    fprintf(f, "{\"page_size\": %zu", page_size);
    if (!scan_only)
        fprintf(f, ", \"activity\": %zu, \"segments\": %zu", nacts_all, nsegs_all);
    fprintf(f, ", \"cpus\": {");
    for (int k = 0; k < ncpus; k++) {
        const struct cpustate *c = &states[k];
        fprintf(f, "%s\"%d\": {\"events\": %" PRIu64 ", \"pages\": %" PRIu64 ", \"missed_pages\": %" PRIu64
                ", \"missed_stored\": %" PRIu64 ", \"missed_unknown_pages\": %" PRIu64,
                k ? ", " : "", c->cpu, c->nevents, c->pages, c->missed_pages, c->missed_stored, c->missed_unknown);
        if (!scan_only)
            fprintf(f, ", \"unmatched\": %" PRIu64 ", \"truncated\": %" PRIu64 ", \"missed_switches\": %" PRIu64,
                    c->unmatched, c->truncated, c->missed_switches);
        fprintf(f, ", \"first_tsc\": %" PRId64 ", \"last_tsc\": %" PRId64 "}",
                c->first_ts == INT64_MIN ? 0 : c->first_ts, c->last_ts == INT64_MIN ? 0 : c->last_ts);
    }
    fprintf(f, "}, \"markers\": [");
    for (int i = 0; i < nmarkers; i++)
        fprintf(f, "%s{\"cpu\": %d, \"tsc\": %" PRId64 ", \"text\": \"%s\"}", i ? ", " : "", markers[i].cpu,
                markers[i].tsc, markers[i].text);
    fprintf(f, "], \"addresses\": [");
    size_t w = 0;
    for (size_t i = 0; i < addrs.cap; i++)
        if (addrs.slot[i])
            fprintf(f, "%s\"%" PRIx64 "\"", w++ ? ", " : "", addrs.slot[i]);
    fprintf(f, "], \"unknown_pids\": [");
    for (size_t i = 0; i < nunknown; i++)
        fprintf(f, "%s%d", i ? ", " : "", unknown[i]);
    fprintf(f, "]}\n");
    if (fclose(f))
        die("%s: %s", path, strerror(errno));
}

int main(int argc, char **argv)
{
    const char *in, *out;
    parse_args(argc, argv, &in, &out);
    S_EMPTY = intern("");
    S_HRTIMER = intern("hrtimer");
    S_TIMER = intern("timer");
    load_events(in);
    load_symbols(in);
    load_comms(in);
    size_t page_size = (size_t)pg_data_off + (size_t)pg_data_size;

    int cpus[4096];
    int ncpus = list_cpus(in, cpus, 4096);
    if (only_cpu >= 0) {
        int found = 0;
        for (int k = 0; k < ncpus; k++)
            found |= cpus[k] == only_cpu;
        if (!found)
            die("%s: no capture of CPU %d", in, only_cpu);
        cpus[0] = only_cpu;
        ncpus = 1;
    }
    states = js_calloc((size_t)ncpus, sizeof *states);
    nstates = ncpus;
    if (!scan_only) {
        act_fd = create_out(out, "activity.bin");
        if (detours_path)
            load_detours(out);
        else
            seg_fd = create_out(out, "segments.bin");
    }
    for (int k = 0; k < ncpus; k++) {
        states[k].cpu = cpus[k];
        states[k].first_ts = INT64_MIN;
        states[k].last_ts = INT64_MIN;
        parse_cpu(&states[k], in, page_size); /* a scan keeps no record: its memory does not grow with them */
    }
    name_unknown_threads();

    if (!scan_only) {
        if (detours_path) {
            attribute(nsegs, 1);
            close_out(pieces_out, "pieces.bin");
            close_out(containers_out, "containers.bin");
        }
        spill_rest();
        if (close(act_fd) || (seg_fd >= 0 && close(seg_fd)))
            die("%s: %s", out, strerror(errno));
        write_file(out, "strings.bin", str_buf, str_len);
    }
    write_counts(out, states, ncpus, page_size, nacts, nsegs);
    if (events_out && fclose(events_out))
        die("--events: %s", strerror(errno));
    return 0;
}
