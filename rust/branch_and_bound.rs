//! Stage 4: exact branch and bound over one null-space component.
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
//! The order of branches is fixed, so the first solution found, and the node
//! count, do not depend on threads.

use crate::cholesky::NullBasis;
use crate::limits::{Budget, Stop};
use crate::null_space::Component;

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
