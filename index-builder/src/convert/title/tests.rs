use super::*;

fn lines(text: &[&str]) -> Vec<Line> {
    text.iter().map(|t| Line::new(*t, 0.0)).collect()
}

fn title(property: Option<&str>, first: &[&str]) -> Option<String> {
    let lines = lines(first);
    let text = first.join("\n");
    choose(&Evidence {
        property,
        lines: &lines,
        styled: None,
        text: &text,
    })
}

#[test]
fn a_standard_is_titled_by_its_designation_and_name() {
    let first = [
        "МИНИСТЕРСТВО СТРОИТЕЛЬСТВА И ЖИЛИЩНО-КОММУНАЛЬНОГО ХОЗЯЙСТВА",
        "РОССИЙСКОЙ ФЕДЕРАЦИИ",
        "СВОД ПРАВИЛ",
        "СП 47.13330.2016",
        "ИНЖЕНЕРНЫЕ ИЗЫСКАНИЯ ДЛЯ СТРОИТЕЛЬСТВА",
        "ОСНОВНЫЕ ПОЛОЖЕНИЯ",
        "Engineering survey for construction. Basic principles",
        "Актуализированная редакция СНиП 11-02-96",
        "Издание официальное",
    ];
    let want = "СП 47.13330.2016 Инженерные изыскания для строительства. Основные положения";
    assert_eq!(title(None, &first).as_deref(), Some(want));
    // The download site's boilerplate in the property changes nothing.
    assert_eq!(
        title(Some("Скачать СП 47.13330.2016 бесплатно"), &first).as_deref(),
        Some(want)
    );
    // A designation and name on one line, and a ГОСТ Р.
    let gost = [
        "ГОСТ Р 51872-2002 ДОКУМЕНТАЦИЯ ИСПОЛНИТЕЛЬНАЯ ГЕОДЕЗИЧЕСКАЯ",
        "Правила выполнения",
    ];
    assert_eq!(
        title(None, &gost).as_deref(),
        Some("ГОСТ Р 51872-2002 Документация исполнительная геодезическая")
    );
    // Mentioned in running text, a designation is not the title.
    let prose = [
        "Монтаж систем отопления",
        "Выполняется по ГОСТ 21.101-2020 и проекту.",
    ];
    assert_eq!(
        title(None, &prose).as_deref(),
        Some("Монтаж систем отопления")
    );
}

#[test]
fn an_act_is_titled_by_its_type_issuer_date_number_and_name() {
    let first = [
        "Зарегистрировано в Минюсте России 25 апреля 2008 г. N 11580",
        "ПРАВИТЕЛЬСТВО РОССИЙСКОЙ ФЕДЕРАЦИИ",
        "ПОСТАНОВЛЕНИЕ",
        "от 16 февраля 2008 г. N 87",
        "О СОСТАВЕ РАЗДЕЛОВ ПРОЕКТНОЙ ДОКУМЕНТАЦИИ",
        "И ТРЕБОВАНИЯХ К ИХ СОДЕРЖАНИЮ",
        "В соответствии со статьей 48 Градостроительного кодекса Российской Федерации",
    ];
    assert_eq!(
        title(None, &first).as_deref(),
        Some("Постановление Правительства РФ от 16.02.2008 № 87 \"О составе разделов проектной документации и требованиях к их содержанию\"")
    );
    let order = [
        "МИНИСТЕРСТВО СТРОИТЕЛЬСТВА И ЖИЛИЩНО-КОММУНАЛЬНОГО ХОЗЯЙСТВА РОССИЙСКОЙ ФЕДЕРАЦИИ",
        "ПРИКАЗ",
        "от 30 декабря 2016 г. № 1033/пр",
        "Об утверждении СП 47.13330",
    ];
    assert_eq!(
        title(None, &order).as_deref(),
        Some("Приказ Министерства строительства и жилищно-коммунального хозяйства РФ от 30.12.2016 № 1033/пр \"Об утверждении СП 47.13330\"")
    );
}

#[test]
fn a_property_is_the_title_only_when_it_is_the_documents_own() {
    let first = ["Installation Guide", "Install the pump on a level base."];
    for junk in [
        "https://example.com/files/guide.pdf",
        "guide.pdf",
        "Microsoft Word - guide.doc",
        "Скачать бесплатно",
        "Строим будущее вместе!",
    ] {
        assert_eq!(
            title(Some(junk), &first).as_deref(),
            Some("Installation Guide"),
            "{junk}"
        );
    }
    assert_eq!(
        title(Some("Pump installation guide"), &first).as_deref(),
        Some("Pump installation guide")
    );
}

#[test]
fn a_title_never_ends_mid_phrase() {
    let first = [
        "Правила технической эксплуатации систем и",
        "сооружений водоснабжения",
        "Общие положения.",
    ];
    assert_eq!(
        title(None, &first).as_deref(),
        Some("Правила технической эксплуатации систем и сооружений водоснабжения")
    );
    let cut = title(Some("Правила технической эксплуатации систем и"), &first);
    assert_eq!(
        cut.as_deref(),
        Some("Правила технической эксплуатации систем и сооружений водоснабжения")
    );
}

#[test]
fn the_largest_type_on_the_first_page_is_the_title() {
    let lines = vec![
        Line::new("Скачать ГОСТ бесплатно на сайте", 8.0),
        Line::new("ООО «Водоканал»", 10.0),
        Line::new("ТЕХНИЧЕСКИЕ УСЛОВИЯ НА ПОДКЛЮЧЕНИЕ", 18.0),
        Line::new("К СЕТЯМ ВОДОСНАБЖЕНИЯ", 18.0),
        Line::new("Настоящие условия выдаются заявителю.", 10.0),
        Line::new("Срок действия три года.", 10.0),
    ];
    let got = choose(&Evidence {
        property: Some("Лучшие условия для вашего бизнеса!"),
        lines: &lines,
        styled: None,
        text: "",
    });
    assert_eq!(
        got.as_deref(),
        Some("Технические условия на подключение к сетям водоснабжения")
    );
}

#[test]
fn boilerplate_is_told_from_titles() {
    for b in [
        "Документ предоставлен КонсультантПлюс",
        "www.consultant.ru",
        "Страница 1 из 45",
        "- 2 -",
        "docs.cntd.ru",
    ] {
        assert!(is_boilerplate(b), "{b}");
    }
    for t in [
        "ПРАВИЛА ПОЖАРНОЙ БЕЗОПАСНОСТИ",
        "Installation Guide",
        "СП 60.13330.2020",
    ] {
        assert!(!is_boilerplate(t), "{t}");
    }
    assert_eq!(
        sentence_case("ТРЕБОВАНИЯ К СИСТЕМАМ ГВС И ХВС"),
        "Требования к системам ГВС и ХВС"
    );
}
