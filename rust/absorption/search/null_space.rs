//! Stage 6: split the null space of the Gram matrix into independent parts.
//!
//! When `G` is singular the real solutions are `s* + null(G)`. The reduced
//! null basis (see `cholesky`) has one vector per free neuron; its support is
//! that neuron plus the basic neurons it moves. Neurons linked through shared
//! supports form a component; different components share no neuron, so
//! their 0/1 searches are independent and the search cost is the sum, not
//! the product, of theirs. Duplicated or split neurons give components of
//! two to four neurons. Basic neurons outside every support are fixed at
//! their relaxed value.

use crate::linalg::cholesky::NullBasis;

/// One independent part of the search.
#[derive(Debug, Clone, PartialEq)]
pub struct Component {
    /// Positions in `NullBasis::free` of this component's free neurons.
    pub free: Vec<usize>,
    /// Original indices of the basic neurons its null vectors move.
    pub basic: Vec<usize>,
}

impl Component {
    pub fn size(&self) -> usize {
        self.free.len() + self.basic.len()
    }
}

fn find(parent: &mut [usize], mut x: usize) -> usize {
    while parent[x] != x {
        parent[x] = parent[parent[x]];
        x = parent[x];
    }
    x
}

/// Components ordered by their smallest neuron, and the fixed neurons.
pub fn components(null: &NullBasis, pivots: &[usize], m: usize) -> (Vec<Component>, Vec<usize>) {
    let mut parent: Vec<usize> = (0..m).collect();
    let mut touched = vec![false; m];
    for (k, &f) in null.free.iter().enumerate() {
        touched[f] = true;
        for &(b, _) in &null.coefficients[k] {
            touched[b] = true;
            let (rf, rb) = (find(&mut parent, f), find(&mut parent, b));
            if rf != rb {
                parent[rf.max(rb)] = rf.min(rb);
            }
        }
    }
    let mut slot = vec![usize::MAX; m];
    let mut comps: Vec<Component> = Vec::new();
    let mut free_pos = vec![usize::MAX; m];
    for (k, &f) in null.free.iter().enumerate() {
        free_pos[f] = k;
    }
    for i in 0..m {
        if !touched[i] {
            continue;
        }
        let root = find(&mut parent, i);
        if slot[root] == usize::MAX {
            slot[root] = comps.len();
            comps.push(Component {
                free: Vec::new(),
                basic: Vec::new(),
            });
        }
        let comp = &mut comps[slot[root]];
        if free_pos[i] != usize::MAX {
            comp.free.push(free_pos[i]);
        } else {
            comp.basic.push(i);
        }
    }
    let fixed = pivots.iter().copied().filter(|&p| !touched[p]).collect();
    (comps, fixed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn disjoint_supports_give_separate_components() {
        // neurons 0..6; free 3 moves basic 0; free 5 moves basics 1 and 2.
        let null = NullBasis {
            free: vec![3, 5],
            coefficients: vec![vec![(0, -1.0)], vec![(1, -0.5), (2, -0.5)]],
        };
        let (comps, fixed) = components(&null, &[0, 1, 2, 4], 6);
        assert_eq!(
            comps,
            vec![
                Component {
                    free: vec![0],
                    basic: vec![0]
                },
                Component {
                    free: vec![1],
                    basic: vec![1, 2]
                },
            ]
        );
        assert_eq!(fixed, vec![4]);
    }
}
