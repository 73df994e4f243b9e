/* Trace-driven cache simulator for `jitterscope whatif cache` (spec A.8-A.10; the shared-memory jitter
 * paper's OS cache, App. C.1, prefetching App. F.1, selective pinning App. F.2).
 *
 * Set-associative, LRU, write-back, write-allocate.  Optional L1 in front (no OS distinction there,
 * as in the paper).  Kernel accesses go to the OS cache when there is one, application accesses to L2
 * (shared user/kernel pages are not modelled: kernel bursts use their own addresses).  Overflow
 * sharing, every [impl] choice of the spec (A.8) as a configuration value:
 *   - an evicted non-alien line is sent to the other cache (a dirty one is written back first, so it
 *     arrives clean); the other cache accepts it only if the set holds < assoc/2 aliens, in a free way
 *     or in place of its LRU own line (which leaves to memory, not overflowed again);
 *   - the home cache's per-set overflow bit says "a line of this set may be in the other cache"; a miss
 *     with the bit set probes the other cache; a hit there moves the line home (migrate_back) or is
 *     served in place;
 *   - aliens are evicted first; an evicted alien is dropped (written back if dirty), never re-overflowed;
 *   - flush (at each switch back to the application): the OS cache is emptied, every alien in both
 *     caches invalidated (dirty ones written back) and every overflow bit cleared.
 * Time is the global access count; an epoch is a run of one privilege level (a burst or the
 * application between bursts), its predicted length an exponential moving average per level.
 */
#include <stdlib.h>
#include <string.h>
#include <stddef.h>
#include "js_cachesim.h"

enum { V = 1, D = 2, ALIEN = 4, OSL = 8, PF = 16 };

typedef struct { uint64_t tag, last, when; uint32_t flags, pad; } line_t;   /* last: LRU stamp; when: time */
typedef struct { uint32_t sets, ways; line_t *l; uint8_t *ovf; } cache_t;

typedef struct {
    const js_cache_config *cfg;
    js_cache_stats *st;
    cache_t l1, l2, os;
    uint64_t now, tick, l2acc, epoch_start;
    double pred[2];
    int cur;
    uint64_t *pf;
    uint32_t pf_n, pf_head;
} sim_t;

static int cache_init(cache_t *c, uint32_t sets, uint32_t ways) {
    c->sets = sets; c->ways = ways; c->l = NULL; c->ovf = NULL;
    if (!sets) return 0;
    c->l = calloc((size_t)sets * ways, sizeof(line_t));
    c->ovf = calloc(sets, 1);
    return c->l && c->ovf ? 0 : -1;
}

static line_t *set_of(cache_t *c, uint64_t line) { return c->l + (size_t)(line % c->sets) * c->ways; }

static line_t *find(cache_t *c, uint64_t line) {
    line_t *s = set_of(c, line);
    for (uint32_t w = 0; w < c->ways; w++)
        if ((s[w].flags & V) && s[w].tag == line) return &s[w];
    return NULL;
}

static int active(sim_t *S, const line_t *x) {
    double mean = S->l2acc ? (double)S->now / (double)S->l2acc : 1.0;
    return (double)(S->now - x->when) <= S->cfg->active_mult * mean;
}

static void touch(sim_t *S, line_t *x) { x->last = ++S->tick; x->when = S->now; }

static int level(const line_t *x) { return (x->flags & OSL) ? JS_OS : JS_APP; }

/* Retention class (lower = evicted first): aliens, then (pinning) the level without priority now. */
static int klass(sim_t *S, const cache_t *c, const line_t *x) {
    if (x->flags & ALIEN) return 0;
    if (!S->cfg->pin || c == &S->l1 || S->pred[S->cur] <= 0) return 1;
    double progress = (double)(S->now - S->epoch_start) / S->pred[S->cur];
    int favoured = progress * 100.0 < S->cfg->pin_pct ? S->cur : !S->cur;
    return level(x) == favoured ? 2 : 1;
}

/* The way to fill in this set: a free one, else the LRU line of the lowest class.  avoid_active: never
 * an active line of the running level (prefetch); NULL when none qualifies. */
static line_t *victim(sim_t *S, cache_t *c, uint64_t line, int avoid_active) {
    line_t *s = set_of(c, line), *best = NULL;
    int bk = 99;
    for (uint32_t w = 0; w < c->ways; w++) {
        if (!(s[w].flags & V)) return &s[w];
        if (avoid_active && level(&s[w]) == S->cur && active(S, &s[w])) continue;
        int k = klass(S, c, &s[w]);
        if (!best || k < bk || (k == bk && s[w].last < best->last)) { best = &s[w]; bk = k; }
    }
    return best;
}

static cache_t *home(sim_t *S, int lvl) { return lvl == JS_OS && S->os.sets ? &S->os : &S->l2; }
static cache_t *other(sim_t *S, cache_t *c) { return !S->os.sets ? NULL : c == &S->l2 ? &S->os : &S->l2; }

static void pf_push(sim_t *S, uint64_t tag) {
    uint32_t cap = S->cfg->prefetch_lines;
    if (S->pf_n < cap) S->pf[(S->pf_head + S->pf_n++) % cap] = tag;
    else { S->pf[S->pf_head] = tag; S->pf_head = (S->pf_head + 1) % cap; }
}

/* A line leaves cache c, pushed out by an access of level `by`. */
static void leave(sim_t *S, cache_t *c, line_t *x, int by, int may_overflow);

static void overflow_into(sim_t *S, cache_t *o, cache_t *h, line_t x) {
    line_t *s = set_of(o, x.tag), *slot = NULL;
    uint32_t aliens = 0;
    for (uint32_t w = 0; w < o->ways; w++)
        if ((s[w].flags & (V | ALIEN)) == (V | ALIEN)) aliens++;
    if (aliens * 2 >= o->ways) { S->st->overflow_rejected++; return; }
    for (uint32_t w = 0; w < o->ways && !slot; w++)
        if (!(s[w].flags & V)) slot = &s[w];
    if (!slot)                                        /* aliens < assoc/2: an own line exists */
        for (uint32_t w = 0; w < o->ways; w++)
            if (!(s[w].flags & ALIEN) && (!slot || s[w].last < slot->last)) slot = &s[w];
    if (slot->flags & V) leave(S, o, slot, S->cur, 0);
    *slot = x;
    slot->flags = (x.flags & (OSL)) | V | ALIEN;
    h->ovf[x.tag % h->sets] = 1;
    S->st->overflows++;
}

static void leave(sim_t *S, cache_t *c, line_t *x, int by, int may_overflow) {
    line_t old = *x;
    x->flags = 0;
    if (old.flags & D) S->st->writebacks++;
    old.flags &= ~(uint32_t)D;
    if (level(&old) == JS_APP && by == JS_OS && c != &S->l1) {
        S->st->app_evicted_by_os++;
        if (S->cfg->prefetch_lines && !(old.flags & ALIEN) && active(S, &old)) pf_push(S, old.tag);
    }
    cache_t *o = other(S, c);
    if (may_overflow && o && S->cfg->overflow && !(old.flags & ALIEN)) overflow_into(S, o, c, old);
}

static void install(sim_t *S, cache_t *c, uint64_t tag, int lvl, uint32_t extra) {
    line_t *v = victim(S, c, tag, 0);
    if (v->flags & V) leave(S, c, v, S->cur, 1);
    v->tag = tag; touch(S, v); v->flags = V | extra | (lvl == JS_OS ? OSL : 0);
}

static void l2_access(sim_t *S, uint64_t tag, int lvl, int write) {
    cache_t *h = home(S, lvl), *o = other(S, h);
    S->st->l2_accesses[lvl]++;
    S->l2acc++;
    line_t *x = find(h, tag);
    if (x && !(x->flags & ALIEN)) {
        S->st->home_hits[lvl]++;
        touch(S, x);
        if (write) x->flags |= D;
        if ((x->flags & PF) && lvl == JS_APP) { S->st->prefetch_useful++; x->flags &= ~(uint32_t)PF; }
        return;
    }
    if (o && S->cfg->overflow && h->ovf[tag % h->sets] && (x = find(o, tag)) && (x->flags & ALIEN)) {
        S->st->other_hits[lvl]++;
        if (S->cfg->migrate_back) {
            uint32_t d = (x->flags & D) | (write ? D : 0);
            x->flags = 0;
            install(S, h, tag, lvl, d);
        } else {
            touch(S, x);
            if (write) x->flags |= D;
        }
        return;
    }
    S->st->misses[lvl]++;
    install(S, h, tag, lvl, write ? D : 0);
}

static void access1(sim_t *S, uint64_t addr, int lvl, int write) {
    if (!S->l1.sets) { l2_access(S, addr >> JS_CACHE_LINE_SHIFT, lvl, write); return; }
    uint32_t sh = S->cfg->l1_line_shift;
    uint64_t tag = addr >> sh;
    line_t *x = find(&S->l1, tag);
    if (x) { touch(S, x); if (write) x->flags |= D; return; }
    line_t *v = victim(S, &S->l1, tag, 0);
    if ((v->flags & (V | D)) == (V | D))   /* L1 write-back: a write access to L2 */
        l2_access(S, v->tag >> (JS_CACHE_LINE_SHIFT - sh), level(v), 1);
    l2_access(S, addr >> JS_CACHE_LINE_SHIFT, lvl, 0);
    v->tag = tag; touch(S, v); v->flags = V | (write ? D : 0) | (lvl == JS_OS ? OSL : 0);
}

static void prefetch(sim_t *S) {
    for (uint32_t i = 0; i < S->pf_n; i++) {
        uint64_t tag = S->pf[(S->pf_head + i) % S->cfg->prefetch_lines];
        if (find(&S->l2, tag)) continue;
        line_t *v = victim(S, &S->l2, tag, 1);
        if (!v) { S->st->prefetch_skipped++; continue; }
        if (v->flags & V) leave(S, &S->l2, v, JS_APP, 0);
        v->tag = tag; touch(S, v); v->flags = V | PF;
        S->st->prefetched++;
    }
    S->pf_n = S->pf_head = 0;
}

static void flush(sim_t *S) {
    for (size_t i = 0; i < (size_t)S->os.sets * S->os.ways; i++)
        if (S->os.l[i].flags & V) { if (S->os.l[i].flags & D) S->st->writebacks++; S->os.l[i].flags = 0; }
    for (size_t i = 0; i < (size_t)S->l2.sets * S->l2.ways; i++)
        if ((S->l2.l[i].flags & (V | ALIEN)) == (V | ALIEN)) {
            if (S->l2.l[i].flags & D) S->st->writebacks++;
            S->l2.l[i].flags = 0;
        }
    memset(S->os.ovf, 0, S->os.sets);
    memset(S->l2.ovf, 0, S->l2.sets);
    S->st->flushes++;
}

static void switch_to(sim_t *S, int lvl) {
    double len = (double)(S->now - S->epoch_start), a = 1.0 / (double)(1u << S->cfg->ema_shift);
    S->pred[S->cur] = S->pred[S->cur] > 0 ? S->pred[S->cur] + a * (len - S->pred[S->cur]) : len;
    S->cur = lvl;
    S->epoch_start = S->now;
}

static void burst(sim_t *S, js_cache_source *s, uint64_t n) {
    switch_to(S, JS_OS);
    uint64_t pf_at = S->cfg->prefetch_lines && S->pred[JS_OS] > 0
        ? (uint64_t)(S->pred[JS_OS] * S->cfg->prefetch_pct / 100.0) : n;
    for (uint64_t j = 0; j < n; j++) {
        if (j == pf_at && S->pf_n) prefetch(S);
        uint64_t line = (s->base >> JS_CACHE_LINE_SHIFT) + (s->cursor + j) % s->lines;
        int write = s->write_every && j % s->write_every == s->write_every - 1;
        S->now++;
        S->st->accesses[JS_OS]++;
        access1(S, line << JS_CACHE_LINE_SHIFT, JS_OS, write);
    }
    if (S->pf_n) prefetch(S);   /* the epoch ended before the predicted point: at the switch */
    s->cursor += n;
    S->st->bursts++;
    if (S->cfg->flush && S->os.sets) flush(S);
    switch_to(S, JS_APP);
}

int js_cachesim_run(const js_cache_config *cfg, const uint64_t *trace, uint64_t n,
                    const uint64_t *pos, const uint32_t *src, const uint64_t *len, uint64_t nbursts,
                    js_cache_source *sources, uint32_t nsources, js_cache_stats *st) {
    sim_t S;
    memset(&S, 0, sizeof S);
    memset(st, 0, sizeof *st);
    S.cfg = cfg; S.st = st; S.cur = JS_APP;
    int rc = -1;
    if (cache_init(&S.l1, cfg->l1_sets, cfg->l1_ways) || cache_init(&S.l2, cfg->l2_sets, cfg->l2_ways)
        || cache_init(&S.os, cfg->os_sets, cfg->os_ways)) goto out;
    if (cfg->prefetch_lines && !(S.pf = calloc(cfg->prefetch_lines, sizeof(uint64_t)))) goto out;
    uint64_t b = 0;
    for (uint64_t i = 0; i < n; i++) {
        for (; b < nbursts && pos[b] <= i; b++)
            if (src[b] < nsources && sources[src[b]].lines) burst(&S, &sources[src[b]], len[b]);
        uint64_t w = trace[i], addr = w >> 2;
        int op = (int)(w & 3);
        S.now++;
        st->accesses[JS_APP]++;
        access1(&S, addr, JS_APP, op == 1);
        if (op == 2) { S.now++; access1(&S, addr, JS_APP, 1); }
    }
    rc = 0;
out:
    free(S.l1.l); free(S.l1.ovf); free(S.l2.l); free(S.l2.ovf); free(S.os.l); free(S.os.ovf); free(S.pf);
    return rc;
}

int js_cachesim_layout(uint64_t *out, int n) {
    uint64_t v[] = {sizeof(js_cache_config), offsetof(js_cache_config, l2_sets), offsetof(js_cache_config, ema_shift),
                    sizeof(js_cache_stats), offsetof(js_cache_stats, writebacks), offsetof(js_cache_stats, bursts),
                    sizeof(js_cache_source), offsetof(js_cache_source, cursor), offsetof(js_cache_source, write_every)};
    int k = (int)(sizeof v / sizeof v[0]);
    for (int i = 0; i < k && i < n; i++) out[i] = v[i];
    return k;
}
