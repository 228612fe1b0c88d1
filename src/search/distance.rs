//! Edit distances for typo tolerance: optimal string alignment (Levenshtein plus adjacent
//! transpositions), against a word or against a stem with its tail free.

/// Optimal string alignment distance (Levenshtein plus adjacent transpositions), or `None`
/// when it exceeds `max`.
pub fn osa_distance(a: &str, b: &str, max: usize) -> Option<usize> {
    let a: Vec<char> = a.chars().collect();
    Osa::default().distance(&a, b, max)
}

/// [`osa_distance`] with buffers kept between calls: comparing a word with a whole vocabulary
/// allocates nothing per pair.
#[derive(Debug, Default)]
pub struct Osa {
    b: Vec<char>,
    /// The rows i − 2, i − 1 and i of the distance matrix.
    rows: [Vec<usize>; 3],
}

impl Osa {
    pub fn distance(&mut self, a: &[char], b: &str, max: usize) -> Option<usize> {
        self.b.clear();
        self.b.extend(b.chars());
        osa(&mut self.rows, a, &self.b, max, 0).map(|(d, _)| d)
    }

    /// The distance from the word `stem` to `word` less up to `free_tail` of its last
    /// characters (the least over those prefixes of `word`), or `None` when it exceeds `max`:
    /// how far a typed word is from an index term that is a stem, e.g. `configuratin` is one
    /// edit from `configur` + the tail `atin`.
    pub fn distance_to_stem(
        &mut self,
        stem: &str,
        word: &[char],
        max: usize,
        free_tail: usize,
    ) -> Option<usize> {
        self.stem_distance(stem, word, max, free_tail)
            .map(|(d, _)| d)
    }

    /// [`Osa::distance_to_stem`], and whether leaving out some of the tail is what made it
    /// (the whole `word` is farther).
    pub fn stem_distance(
        &mut self,
        stem: &str,
        word: &[char],
        max: usize,
        free_tail: usize,
    ) -> Option<(usize, bool)> {
        self.b.clear();
        self.b.extend(stem.chars());
        osa(&mut self.rows, &self.b, word, max, free_tail)
    }
}

/// Optimal string alignment distance from `a` to the nearest of `b` and its prefixes that lack
/// at most `free_tail` characters, and whether that is nearer than the whole `b`; `None` when
/// over `max`.
fn osa(
    rows: &mut [Vec<usize>; 3],
    a: &[char],
    b: &[char],
    max: usize,
    free_tail: usize,
) -> Option<(usize, bool)> {
    if a.len() > b.len() + max || b.len() > a.len() + max + free_tail {
        return None;
    }
    let w = b.len() + 1;
    for row in rows.iter_mut() {
        row.clear();
        row.resize(w, 0);
    }
    let [two, one, cur] = rows;
    for (j, cell) in one.iter_mut().enumerate() {
        *cell = j;
    }
    for i in 1..=a.len() {
        cur[0] = i;
        let mut row_min = cur[0];
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut v = (one[j] + 1).min(cur[j - 1] + 1).min(one[j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                v = v.min(two[j - 2] + 1);
            }
            cur[j] = v;
            row_min = row_min.min(v);
        }
        // Every later row's cells are at least this row's least.
        if row_min > max {
            return None;
        }
        std::mem::swap(two, one);
        std::mem::swap(one, cur);
    }
    let dist = one[b.len().saturating_sub(free_tail)..]
        .iter()
        .copied()
        .min()
        .unwrap_or(usize::MAX);
    (dist <= max).then_some((dist, dist < one[b.len()]))
}

#[cfg(test)]
mod tests {
    use super::{osa_distance, Osa};

    #[test]
    fn distances() {
        assert_eq!(osa_distance("cahc", "cach", 2), Some(1));
        assert_eq!(osa_distance("instal", "install", 2), Some(1));
        assert_eq!(osa_distance("abc", "abc", 0), Some(0));
        assert_eq!(osa_distance("kitten", "sitting", 2), None);
        assert_eq!(osa_distance("kitten", "sitting", 3), Some(3));
        assert_eq!(osa_distance("устоновка", "установка", 1), Some(1));
        assert_eq!(osa_distance("ab", "ba", 1), Some(1));
        assert_eq!(osa_distance("", "abc", 3), Some(3));
        assert_eq!(osa_distance("abc", "", 2), None);
    }

    #[test]
    fn a_typed_word_is_measured_against_a_stem_with_its_tail_free() {
        let mut osa = Osa::default();
        let w = |s: &str| s.chars().collect::<Vec<char>>();
        // `configuration` is indexed as `configur`: a typo in the tail costs nothing more.
        assert_eq!(
            osa.distance_to_stem("configur", &w("configuratin"), 2, 4),
            Some(0)
        );
        assert_eq!(
            osa.distance_to_stem("configur", &w("confguratin"), 2, 4),
            Some(1)
        );
        assert_eq!(
            osa.distance_to_stem("configur", &w("configuratin"), 2, 3),
            Some(1)
        );
        assert_eq!(osa.distance_to_stem("configur", &w("confi"), 2, 4), None);
        assert_eq!(
            osa.distance_to_stem("установк", &w("устоновка"), 1, 2),
            Some(1)
        );
        // No tail: the plain distance.
        assert_eq!(osa.distance_to_stem("cach", &w("cahc"), 2, 0), Some(1));
    }
}
