use super::*;

#[test]
fn the_builder_gives_every_posting_back_in_chunk_order() {
    let words = |w: &[&str]| w.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    let (a, b, ab) = (words(&["a"]), words(&["b"]), words(&["a", "b", "b"]));
    let mut builder = LexicalBuilder::default();
    let mut expect_a = Vec::new();
    // Chunk ids and weighted tfs past one, two and four varint bytes.
    for id in 0..300_000u32 {
        let fields: Vec<(&[String], u32)> = match id % 1_000 {
            0 => vec![(&ab, 1)],
            7 => vec![(&a, 200_000), (&b, 1)],
            _ => vec![(&b, 1)],
        };
        assert_eq!(builder.add_chunk(fields), id);
        match id % 1_000 {
            0 => expect_a.push((id, 1)),
            7 => expect_a.push((id, 200_000)),
            _ => {}
        }
    }
    builder.add_chunk([(a.as_slice(), u32::MAX)]);
    expect_a.push((300_000, u32::MAX));
    let index = builder.finish();
    assert_eq!(index.terms, ["a", "b"]);
    assert_eq!(index.postings[0].iter().collect::<Vec<_>>(), expect_a);
    let b_list: Vec<_> = index.postings[1].iter().collect();
    assert_eq!(b_list.len(), 300_000);
    assert_eq!(b_list[0], (0, 2));
    assert_eq!(b_list[299_999], (299_999, 1));
    assert_eq!(index.chunk_lengths[7], 200_001);
    assert!(check_deltas(index.postings[1].chunk_deltas.iter(), 300_001).is_ok());
}

/// BM25's usual k1 and b, every field weighing 1.
fn unweighted() -> crate::analyze::AnalyzerConfig {
    crate::analyze::AnalyzerConfig {
        version: 1,
        k1: 1.2,
        b: 0.75,
        title_weight: 1,
        heading_weight: 1,
        body_weight: 1,
    }
}

/// A word of one term adds its BM25 straight on; a word of several adds its best term's:
/// either way every matching chunk comes back once, in chunk order, with the sum.
#[test]
fn a_chunk_scores_the_sum_of_each_words_best_term() {
    let cfg = unweighted();
    let n = 200;
    let one = |cfg: &crate::analyze::AnalyzerConfig, df: usize, w: f32, tf: u32| {
        let idf = w * bm25_idf(n, df);
        let tf = tf as f32;
        idf * tf * (cfg.k1 + 1.0) / (tf + cfg.k1)
    };
    // (df, weight, word, postings as (chunk, tf, length 10 = the average)).
    let lists = vec![
        (2, 1.0, 0, vec![(5u32, 1u32, 10u32), (130, 2, 10)]),
        (3, 1.0, 1, vec![(5, 1, 10), (64, 3, 10), (199, 1, 10)]),
        (1, 0.6, 1, vec![(64, 1, 10)]),
        (2, 0.6, 1, vec![(63, 1, 10), (199, 4, 10)]),
    ];
    let got = bm25(
        &cfg,
        n,
        n,
        10.0,
        lists
            .into_iter()
            .map(|(df, w, g, p)| (df, w, g, p.into_iter())),
    );
    let expect = vec![
        (5, one(&cfg, 2, 1.0, 1) + one(&cfg, 3, 1.0, 1)),
        (63, one(&cfg, 2, 0.6, 1)),
        (64, one(&cfg, 3, 1.0, 3).max(one(&cfg, 1, 0.6, 1))),
        (130, one(&cfg, 2, 1.0, 2)),
        (199, one(&cfg, 3, 1.0, 1).max(one(&cfg, 2, 0.6, 4))),
    ];
    let mut all = Vec::new();
    got.each(|c, s| all.push((c, s)));
    assert_eq!(all, expect);
    assert_eq!(got.len(), expect.len());
    assert_eq!(got.get(64), Some(expect[2].1));
    assert_eq!(got.get(65), None);
    assert_eq!(got.get(10_000), None);
}

/// The length table gives what the formula gives, to the bit: for lengths in it and past
/// it, and again after the average changes (another engine on the same thread).
#[test]
fn scores_through_the_length_table_are_the_formulas() {
    let cfg = unweighted();
    let n = 5_000;
    let formula = |avg: f32, tf: u32, len: u32| {
        let idf = bm25_idf(n, 3);
        let tf = tf as f32;
        let len_norm = 1.0 - cfg.b + cfg.b * len as f32 / avg;
        idf * tf * (cfg.k1 + 1.0) / (tf + cfg.k1 * len_norm)
    };
    let lens = [
        0u32,
        1,
        9,
        10,
        11,
        255,
        2_047,
        2_048,
        2_049,
        4_999,
        u32::MAX,
    ];
    for avg in [10.0f32, 37.3, 10.0, 1.0] {
        let postings: Vec<(u32, u32, u32)> = lens
            .iter()
            .enumerate()
            .map(|(i, &len)| (i as u32 * 7, 1 + i as u32 % 4, len))
            .collect();
        let got = bm25(
            &cfg,
            n,
            n,
            avg,
            std::iter::once((3, 1.0, 0, postings.clone().into_iter())),
        );
        for (chunk, tf, len) in postings {
            let want = formula(avg, tf, len).max(0.0);
            assert_eq!(
                got.get(chunk).map(f32::to_bits),
                Some(want.to_bits()),
                "avg {avg}, len {len}"
            );
        }
    }
}

/// The tables a query hands back are all zero again, after matches dense (every word of
/// bits set, runs to the end) and sparse (a word here and there), so the next query starts
/// clean.
#[test]
fn score_tables_come_back_cleared() {
    let cfg = unweighted();
    let n = 10_000;
    let dense: Vec<(u32, u32, u32)> = (0..n as u32)
        .filter(|c| c % 3 != 0)
        .map(|c| (c, 1, 10))
        .collect();
    let sparse: Vec<(u32, u32, u32)> = (0..n as u32).step_by(701).map(|c| (c, 2, 10)).collect();
    for postings in [dense, sparse.clone(), vec![(n as u32 - 1, 1, 10)], sparse] {
        let expect: Vec<u32> = postings.iter().map(|p| p.0).collect();
        let s = bm25(
            &cfg,
            n,
            n,
            10.0,
            std::iter::once((expect.len(), 1.0, 0, postings.into_iter())),
        );
        let mut got = Vec::new();
        s.each(|c, _| got.push(c));
        assert_eq!(got, expect);
        drop(s);
        SPARE.with(|spare| {
            let spare = spare.borrow();
            assert_eq!(spare.scores.len(), n);
            assert!(spare.scores.iter().all(|&x| x == 0.0));
            assert!(spare.matched.iter().all(|&w| w == 0));
        });
    }
}

/// Matches read back in chunk order, whole or by range, across word boundaries.
#[test]
fn scores_read_back_by_range_in_chunk_order() {
    let n = 300;
    let hits = [0u32, 1, 63, 64, 65, 127, 128, 200, 255, 256, 299];
    let postings: Vec<(u32, u32, u32)> = hits.iter().map(|&c| (c, 1 + c % 3, 10)).collect();
    let cfg = unweighted();
    let mut s = bm25(
        &cfg,
        n,
        n,
        10.0,
        std::iter::once((11, 1.0, 0, postings.into_iter())),
    );
    let chunks = |s: &Scores, r: std::ops::Range<u32>| {
        let mut out = Vec::new();
        s.each_in(r, |c, _| out.push(c));
        out
    };
    assert_eq!(chunks(&s, 0..u32::MAX), hits);
    let ranges = [
        (0, 0),
        (0, 1),
        (1, 64),
        (63, 65),
        (64, 64),
        (64, 128),
        (65, 300),
        (128, 129),
        (250, 1000),
        (299, 300),
        (400, 500),
        (70, 3),
    ];
    for (a, b) in ranges {
        let want: Vec<u32> = hits
            .iter()
            .copied()
            .filter(|c| (a..b).contains(c))
            .collect();
        assert_eq!(chunks(&s, a..b), want, "{a}..{b}");
    }
    s.each(|c, score| {
        assert_eq!(s.get(c), Some(score));
        assert!(score > 0.0);
    });
    // The odd chunks' bits, one word short: chunks past the given words go too.
    let odd = [0xaaaa_aaaa_aaaa_aaaau64; 4];
    s.retain(&odd);
    assert_eq!(chunks(&s, 0..u32::MAX), [1, 63, 65, 127, 255]);
    assert_eq!(s.len(), 5);
    assert_eq!((s.get(64), s.get(299)), (None, None));
    assert!(s.get(63).is_some());
    s.retain(&[]);
    assert!(s.is_empty());
    assert!(Scores::default().is_empty() && chunks(&Scores::default(), 0..9).is_empty());
}
