/* Pass 1 of the DVFS replay (js_dvfs.h): the per-subframe loop of one thread, native because a 60 s run
 * is ~180,000 subframes per thread and mode.  Every expression mirrors tests/support/dvfs_ref.py (the
 * former pure-Python pass) in the same order, so that results are identical to the last bit; build
 * without -ffast-math. */
#include <math.h>
#include <stddef.h>
#include "js_dvfs.h"

static double scale(const js_dvfs_params *p, double f) {
    if (!p->ctl) return 1.0;
    if (!p->physical) return 1.0 / f;
    return p->alpha / f + 1.0 - p->alpha;
}

/* controller.Controller.choose: tau(f) = tau(f0) - J/k, quantised to the table, clamped/saturated */
static double choose(const js_dvfs_params *p, double tau0, double j) {
    double target = tau0 - j / (double)p->k, raw;
    if (tau0 <= 0) {
        raw = 1.0;
    } else {
        double r = target / tau0;
        if (!p->physical) {
            raw = r <= 0 ? INFINITY : 1.0 / r;
        } else {
            double rest = r - (1.0 - p->alpha);
            raw = rest <= 0 ? INFINITY : p->alpha / rest;
        }
    }
    const double *t = p->table;
    int n = p->ntable;
    if (raw >= t[n - 1]) return t[n - 1];
    if (raw <= t[0]) return t[0];
    if (p->ceil) {
        for (int i = 0; i < n; i++)
            if (t[i] >= raw - 1e-12) return t[i];
        return t[n - 1];
    }
    double best = t[0], bd = fabs(t[0] - raw);
    for (int i = 1; i < n; i++) {
        double d = fabs(t[i] - raw);
        if (d < bd || (d == bd && t[i] > best)) { best = t[i]; bd = d; }
    }
    return best;
}

static int bp(js_dvfs_state *s, js_dvfs_out *o) {
    if (s->nbp >= o->cap_bp) return -1;
    o->bp_rec[s->nbp] = s->rec;
    o->bp_sim[s->nbp] = s->sim_off;
    s->nbp++;
    return 0;
}

static int controlled(const js_dvfs_params *p, const js_dvfs_state *s) { return p->ctl && s->n >= p->warmup; }

static int begin(js_dvfs_state *s, const js_dvfs_params *p, js_dvfs_out *o) {
    double f = controlled(p, s) ? choose(p, p->subframe_ns, s->j) : 1.0;
    if (p->ctl && f != s->f) {
        if (bp(s, o)) return -1;
        s->sim_off += p->transition_ns;
        s->t += p->transition_ns;
        if (bp(s, o)) return -1;
    }
    s->f = f;
    s->open = 1;
    s->left = p->subframe_ns;
    s->start_off = s->sim_off;
    s->t = s->t + s->pending;
    s->pending = 0.0;
    s->scale = scale(p, f);
    return 0;
}

static int close_sub(js_dvfs_state *s, const js_dvfs_params *p, js_dvfs_out *o) {
    if (!s->open) return 0;
    if (s->nsub >= o->cap_sub) return -1;
    o->sub_item[s->nsub] = s->item;
    o->sub_off[s->nsub] = s->start_off;
    o->sub_f[s->nsub] = s->f;
    o->sub_t[s->nsub] = s->t;
    o->sub_j[s->nsub] = s->j;
    s->nsub++;
    s->busy += s->t;
    s->energy += pow(s->f, 3.0) * s->t;
    if (controlled(p, s)) {
        s->j += s->t - s->tau0;
        if (p->evict_ns != 0.0) s->j += s->evict;   /* A.6: the bursts' ts-line evictions, E x t_mem / banks */
    }
    s->evict = 0.0;
    s->n++;
    s->open = 0;
    s->t = 0.0;
    s->tau0 = 0.0;
    return 0;
}

static int work(js_dvfs_state *s, const js_dvfs_params *p, js_dvfs_out *o, double amount) {
    while (amount > 0) {
        if (!s->open && begin(s, p, o)) return -1;
        double take = amount < s->left ? amount : s->left;
        double dt = take * s->scale;
        s->rec = s->rec + take;
        amount = amount - take;
        s->left = s->left - take;
        s->sim_off += dt;
        s->t += dt;
        s->tau0 += take;
        if (bp(s, o)) return -1;
        if (s->left <= 0 && close_sub(s, p, o)) return -1;
    }
    return 0;
}

static int wait_op(js_dvfs_state *s, const js_dvfs_params *p, double jitter) {
    if (p->jitter && jitter != 0.0) {
        if (s->open) s->t += jitter;
        else s->pending += jitter;
        s->evict += p->evict_ns;
    }
    return 0;
}

/* Runs ops[state->next ...]: returns the index of a CREATE or JOIN op (after its deadline; the caller
 * resumes at index + 1), n when the thread is done (its last subframe closed), -1 when an output is full. */
int64_t js_dvfs_run(js_dvfs_state *s, const js_dvfs_params *p, const js_dvfs_op *ops, int64_t n, js_dvfs_out *o) {
    for (int64_t i = s->next; i < n; i++) {
        const js_dvfs_op *op = &ops[i];
        double amount;
        s->item = op->item;
        s->next = i + 1;
        switch (op->op) {
        case JS_OP_SEG:
            s->sim_off = 0.0;
            s->rec = 0.0;
            o->map_lo[op->a] = s->nbp;
            if (bp(s, o)) return -1;
            break;
        case JS_OP_WORK:
        case JS_OP_END:
            amount = op->val - s->rec;
            if (work(s, p, o, amount > 0.0 ? amount : 0.0)) return -1;
            if (op->op == JS_OP_END) o->map_hi[op->a] = s->nbp;
            break;
        case JS_OP_LOST:
            s->rec += op->val;
            if (p->jitter) {
                s->sim_off += op->val;
                s->t += op->val;
                s->evict += p->evict_ns;
            }
            if (bp(s, o)) return -1;
            break;
        case JS_OP_CREATE:
        case JS_OP_JOIN:
            if (close_sub(s, p, o)) return -1;
            return i;
        case JS_OP_WAIT:
            wait_op(s, p, op->val);
            break;
        }
    }
    if (close_sub(s, p, o)) return -1;
    s->next = n;
    return n;
}

int js_dvfs_layout(uint64_t *out, int n) {
    uint64_t v[] = {sizeof(js_dvfs_op), offsetof(js_dvfs_op, op), offsetof(js_dvfs_op, item),
                    sizeof(js_dvfs_params), offsetof(js_dvfs_params, ntable), offsetof(js_dvfs_params, k),
                    offsetof(js_dvfs_params, evict_ns), sizeof(js_dvfs_state), offsetof(js_dvfs_state, n),
                    offsetof(js_dvfs_state, open), offsetof(js_dvfs_state, nsub), sizeof(js_dvfs_out),
                    offsetof(js_dvfs_out, cap_sub)};
    int k = (int)(sizeof v / sizeof v[0]);
    for (int i = 0; i < k && i < n; i++) out[i] = v[i];
    return k;
}
