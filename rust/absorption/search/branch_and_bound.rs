//! Stage 7: exact branch and bound over one null-space component.
//!
//! Inside a component the real solutions are
//! `s_B = s*_B + sum_f N_Bf (x_f - s*_f)` with the free neurons `x_f` in
//! `{0, 1}`. The search fixes free neurons one at a time, most-connected
//! first, and keeps for every basic neuron its current value and the
//! smallest and largest change the unfixed free neurons can still make. A
//! branch dies as soon as some basic neuron can no longer reach `0` or `1`
//! within `delta`. Only the basic neurons touched by the fixed variable are
//! re-tested, so a node costs the size of that variable's column.
//!
//! That search is quick but proves nothing: its values carry the rounding
//! of the relaxation. [`enumerate_component`] is the complete one. It runs
//! the same interval pruning on the rigorous windows of `windows`, in exact
//! fixed-point integer arithmetic (every coefficient rounded to a grid, the
//! rounding added to the window), lets a basic neuron take both values
//! where its window allows, and lists every assignment of the component that
//! the windows allow. An empty list is a proof that no flip set exists.
//!
//! The order of branches is fixed, so the first solution found, and the node
//! count, do not depend on threads.

use crate::absorption::block::ldexp;
use crate::absorption::search::null_space::Component;
use crate::absorption::search::windows::Row;
use crate::limits::{Budget, Stop};
use crate::linalg::cholesky::NullBasis;

struct Search<'s, 'c> {
    columns: Vec<Vec<(usize, f64)>>,
    order: Vec<usize>,
    first: Vec<u8>,
    cur: Vec<f64>,
    rem_min: Vec<f64>,
    rem_max: Vec<f64>,
    value: Vec<u8>,
    delta: f64,
    budget: &'s mut Budget<'c>,
}

impl Search<'_, '_> {
    fn feasible(&self, b: usize) -> bool {
        let lo = self.cur[b] + self.rem_min[b];
        let hi = self.cur[b] + self.rem_max[b];
        let d = self.delta;
        (lo <= d && hi >= -d) || (lo <= 1.0 + d && hi >= 1.0 - d)
    }

    fn set(&mut self, f: usize, x: f64, sign: f64) {
        for &(b, a) in &self.columns[f] {
            if a > 0.0 {
                self.rem_max[b] -= sign * a;
            } else {
                self.rem_min[b] -= sign * a;
            }
            self.cur[b] += sign * a * x;
        }
    }

    fn dfs(&mut self, level: usize) -> Result<bool, Stop> {
        if level == self.order.len() {
            return Ok(true);
        }
        let f = self.order[level];
        for step in 0..2u8 {
            self.budget.tick()?;
            let bit = self.first[f] ^ step;
            let x = f64::from(bit);
            self.set(f, x, 1.0);
            let ok = self.columns[f].iter().all(|&(b, _)| self.feasible(b));
            if ok && self.dfs(level + 1)? {
                self.value[f] = bit;
                return Ok(true);
            }
            self.set(f, x, -1.0);
        }
        Ok(false)
    }
}

/// Find a 0/1 point of `s* + null(G)` restricted to `component`. Returns
/// the neurons of the component set to 1, or `None` when there is none.
pub fn search_component(
    component: &Component,
    null: &NullBasis,
    s_star: &[f64],
    delta: f64,
    budget: &mut Budget<'_>,
) -> Result<Option<Vec<usize>>, Stop> {
    let nb = component.basic.len();
    let local = |b: usize| component.basic.binary_search(&b).ok();
    let mut columns = Vec::with_capacity(component.free.len());
    let mut base: Vec<f64> = component.basic.iter().map(|&b| s_star[b]).collect();
    let mut rem_min = vec![0.0; nb];
    let mut rem_max = vec![0.0; nb];
    let mut first = Vec::with_capacity(component.free.len());
    for &k in &component.free {
        let f = null.free[k];
        let mut col = Vec::with_capacity(null.coefficients[k].len());
        for &(b, a) in &null.coefficients[k] {
            let lb = local(b).expect("component holds every basic neuron its columns move");
            base[lb] -= a * s_star[f];
            if a > 0.0 {
                rem_max[lb] += a;
            } else {
                rem_min[lb] += a;
            }
            col.push((lb, a));
        }
        columns.push(col);
        first.push(u8::from(s_star[f] > 0.5));
    }
    let mut order: Vec<usize> = (0..columns.len()).collect();
    order.sort_by_key(|&f| std::cmp::Reverse(columns[f].len()));
    // A basic neuron that no unfixed variable can bring to 0 or 1 fails now.
    let mut search = Search {
        columns,
        order,
        first,
        cur: base,
        rem_min,
        rem_max,
        value: vec![0; component.free.len()],
        delta,
        budget,
    };
    if !(0..nb).all(|b| search.feasible(b)) || !search.dfs(0)? {
        return Ok(None);
    }
    let mut ones: Vec<usize> = Vec::new();
    for (pos, &k) in component.free.iter().enumerate() {
        if search.value[pos] == 1 {
            ones.push(null.free[k]);
        }
    }
    for (lb, &b) in component.basic.iter().enumerate() {
        if search.cur[lb] > 0.5 {
            ones.push(b);
        }
    }
    ones.sort_unstable();
    Ok(Some(ones))
}

/// Every assignment of one component that the rigorous windows allow.
#[derive(Debug, Clone, PartialEq)]
pub enum Enumeration {
    /// The neurons set to 1 in each allowed assignment (empty: none allowed).
    Solutions(Vec<Vec<usize>>),
    /// More than the cap: the windows are too wide to enumerate.
    TooMany,
}

/// Fixed-point image of the rows of one component: every sum of at most
/// `2^20` coefficients stays far inside `i128`.
struct FixedRows {
    own: Vec<i128>,
    lo: Vec<i128>,
    hi: Vec<i128>,
    /// `columns[v]`: `(row, coefficient)` for free variable `v`.
    columns: Vec<Vec<(usize, i128)>>,
}

fn to_fixed(rows: &[&Row], frees: &[usize]) -> Option<FixedRows> {
    let var_of = |f: usize| frees.binary_search(&f).ok();
    let mut big = 0.0f64;
    for row in rows {
        let coefs: f64 = row.couplings.iter().map(|(_, x)| x.abs()).sum::<f64>() + row.own.abs();
        big = big.max(coefs).max(row.lo.abs()).max(row.hi.abs());
    }
    if !big.is_finite() {
        return None;
    }
    // Scale so that the largest magnitude is about 2^90.
    let e = if big > 0.0 {
        90 - big.log2().ceil() as i32
    } else {
        0
    };
    let q = |x: f64| ldexp(x, e);
    let mut out = FixedRows {
        own: Vec::new(),
        lo: Vec::new(),
        hi: Vec::new(),
        columns: vec![Vec::new(); frees.len()],
    };
    for (k, row) in rows.iter().enumerate() {
        // Each rounded coefficient is off by at most 1/2 a grid step.
        let widen = row.couplings.len() as i128 + 2;
        out.own.push(q(row.own).round() as i128);
        out.lo.push(q(row.lo).floor() as i128 - widen);
        out.hi.push(q(row.hi).ceil() as i128 + widen);
        for &(f, x) in &row.couplings {
            let v = var_of(f)?;
            out.columns[v].push((k, q(x).round() as i128));
        }
    }
    Some(out)
}

struct Enumerator<'s, 'c> {
    fixed: FixedRows,
    order: Vec<usize>,
    cur: Vec<i128>,
    rem_min: Vec<i128>,
    rem_max: Vec<i128>,
    value: Vec<u8>,
    /// Free variables that never change the residual (an exactly zero term).
    inert: Vec<bool>,
    frees: Vec<usize>,
    basic: Vec<usize>,
    found: Vec<Vec<usize>>,
    cap: usize,
    budget: &'s mut Budget<'c>,
}

impl Enumerator<'_, '_> {
    fn options(&self, k: usize, lo_extra: i128, hi_extra: i128) -> [bool; 2] {
        let f = &self.fixed;
        let reach = |b: i128| {
            let lo = self.cur[k] + lo_extra + b * f.own[k];
            let hi = self.cur[k] + hi_extra + b * f.own[k];
            lo <= f.hi[k] && hi >= f.lo[k]
        };
        [reach(0), reach(1)]
    }

    fn feasible(&self, k: usize) -> bool {
        let o = self.options(k, self.rem_min[k], self.rem_max[k]);
        o[0] || o[1]
    }

    fn set(&mut self, v: usize, x: i128, sign: i128) {
        for &(k, a) in &self.fixed.columns[v] {
            if a > 0 {
                self.rem_max[k] -= sign * a;
            } else {
                self.rem_min[k] -= sign * a;
            }
            self.cur[k] += sign * a * x;
        }
    }

    /// Record every completion of the basic neurons; false when over the cap.
    fn leaf(&mut self) -> bool {
        let mut ones: Vec<usize> = (0..self.frees.len())
            .filter(|&v| self.value[v] == 1)
            .map(|v| self.frees[v])
            .collect();
        let mut both = Vec::new();
        for k in 0..self.basic.len() {
            match self.options(k, 0, 0) {
                [true, true] => both.push(self.basic[k]),
                [false, true] => ones.push(self.basic[k]),
                [true, false] => {}
                [false, false] => return true,
            }
        }
        if both.len() >= 20 || self.found.len() + (1usize << both.len()) > self.cap {
            return false;
        }
        for code in 0..1usize << both.len() {
            let mut set = ones.clone();
            set.extend(
                (0..both.len())
                    .filter(|b| code >> b & 1 == 1)
                    .map(|b| both[b]),
            );
            set.sort_unstable();
            self.found.push(set);
        }
        true
    }

    fn dfs(&mut self, level: usize) -> Result<bool, Stop> {
        if level == self.order.len() {
            return Ok(self.leaf());
        }
        let v = self.order[level];
        let values: &[u8] = if self.inert[v] { &[0] } else { &[0, 1] };
        for &bit in values {
            self.budget.tick()?;
            let x = i128::from(bit);
            self.set(v, x, 1);
            let ok = self.fixed.columns[v].iter().all(|&(k, _)| self.feasible(k));
            self.value[v] = bit;
            if ok && !self.dfs(level + 1)? {
                return Ok(false);
            }
            self.set(v, x, -1);
        }
        self.value[v] = 0;
        Ok(true)
    }
}

/// List every assignment of a component (its `rows` and the free neurons
/// `frees`, sorted) that the rigorous windows allow, up to `cap`. A free
/// neuron marked `inert` (its term is exactly zero) is kept at 0.
pub fn enumerate_component(
    rows: &[&Row],
    frees: &[usize],
    inert: &[bool],
    cap: usize,
    budget: &mut Budget<'_>,
) -> Result<Enumeration, Stop> {
    let Some(fixed) = to_fixed(rows, frees) else {
        return Ok(Enumeration::TooMany);
    };
    let nb = rows.len();
    let mut rem_min = vec![0i128; nb];
    let mut rem_max = vec![0i128; nb];
    for col in &fixed.columns {
        for &(k, a) in col {
            if a > 0 {
                rem_max[k] += a;
            } else {
                rem_min[k] += a;
            }
        }
    }
    let mut order: Vec<usize> = (0..frees.len()).collect();
    order.sort_by_key(|&v| std::cmp::Reverse(fixed.columns[v].len()));
    let mut search = Enumerator {
        fixed,
        order,
        cur: vec![0; nb],
        rem_min,
        rem_max,
        value: vec![0; frees.len()],
        inert: inert.to_vec(),
        frees: frees.to_vec(),
        basic: rows.iter().map(|r| r.neuron).collect(),
        found: Vec::new(),
        cap,
        budget,
    };
    if !(0..nb).all(|k| search.feasible(k)) {
        return Ok(Enumeration::Solutions(Vec::new()));
    }
    if !search.dfs(0)? {
        return Ok(Enumeration::TooMany);
    }
    Ok(Enumeration::Solutions(search.found))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::limits::Limits;
    use std::sync::atomic::AtomicBool;

    #[test]
    fn split_neuron_needs_both_halves() {
        // neurons 0 and 1 are halves of one neuron; the relaxed solution
        // puts 1 on neuron 0 and 0 on neuron 1 (which is free): s0 + s1 = 1
        // would need x = (1, 0) or (0, 1); here s*_0 = 1 means s0 + s1 = 1.
        let null = NullBasis {
            free: vec![1],
            coefficients: vec![vec![(0, -1.0)]],
        };
        let comp = Component {
            free: vec![0],
            basic: vec![0],
        };
        let cancel = AtomicBool::new(false);
        let mut budget = Budget::new(Limits::default(), &cancel);
        let found = search_component(&comp, &null, &[1.0, 0.0], 1e-9, &mut budget).unwrap();
        assert_eq!(found, Some(vec![0]));
    }

    fn row(neuron: usize, own: f64, couplings: Vec<(usize, f64)>, lo: f64, hi: f64) -> Row {
        Row {
            neuron,
            own,
            couplings,
            lo,
            hi,
        }
    }

    #[test]
    fn enumeration_lists_every_allowed_assignment() {
        // s_0 + s_1 = 1 within 0.1 (neuron 0 basic, 1 free): two solutions.
        let r = row(0, 1.0, vec![(1, 1.0)], 0.9, 1.1);
        let cancel = AtomicBool::new(false);
        let mut budget = Budget::new(Limits::default(), &cancel);
        let out = enumerate_component(&[&r], &[1], &[false], 16, &mut budget).unwrap();
        assert_eq!(out, Enumeration::Solutions(vec![vec![0], vec![1]]));
        // 2 s_0 - 2 s_1 takes the values -2, 0 and 2, none in [0.4, 0.6].
        let half = row(0, 2.0, vec![(1, -2.0)], 0.4, 0.6);
        let out = enumerate_component(&[&half], &[1], &[false], 16, &mut budget).unwrap();
        assert_eq!(out, Enumeration::Solutions(vec![]));
        // A wide window lets the basic neuron take both values.
        let wide = row(0, 1.0, vec![], -0.5, 1.5);
        let out = enumerate_component(&[&wide], &[], &[], 16, &mut budget).unwrap();
        assert_eq!(out, Enumeration::Solutions(vec![vec![], vec![0]]));
        let out = enumerate_component(&[&wide], &[], &[], 1, &mut budget).unwrap();
        assert_eq!(out, Enumeration::TooMany);
    }

    #[test]
    fn half_integral_target_has_no_solution() {
        // s0 + s1 = 1 with s0 = 2 s1 ... as reduced form: s0 = 1.5 - 2 x
        let null = NullBasis {
            free: vec![1],
            coefficients: vec![vec![(0, -2.0)]],
        };
        let comp = Component {
            free: vec![0],
            basic: vec![0],
        };
        let cancel = AtomicBool::new(false);
        let mut budget = Budget::new(Limits::default(), &cancel);
        let found = search_component(&comp, &null, &[1.5, 0.0], 1e-9, &mut budget).unwrap();
        assert_eq!(found, None);
        assert!(budget.nodes() <= 2);
    }
}
