//! RFC 3339 / ISO 8601 timestamps (`2026-12-01T09:30:00.125+01:00`) as Unix seconds, for the
//! HAR reader; no calendar crate needed for one format.

/// Seconds since 1970-01-01T00:00:00Z, or `None` when `text` is not such a timestamp.
pub fn parse_rfc3339(text: &str) -> Option<f64> {
    let b = text.as_bytes();
    let num = |from: usize, len: usize| -> Option<i64> {
        let s = text.get(from..from + len)?;
        s.bytes()
            .all(|c| c.is_ascii_digit())
            .then(|| s.parse().ok())?
    };
    if b.len() < 19 || b[4] != b'-' || b[7] != b'-' || !matches!(b[10], b'T' | b't' | b' ') {
        return None;
    }
    if b[13] != b':' || b[16] != b':' {
        return None;
    }
    let (year, month, day) = (num(0, 4)?, num(5, 2)?, num(8, 2)?);
    let (hour, minute, second) = (num(11, 2)?, num(14, 2)?, num(17, 2)?);
    let leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0);
    let days_in_month = match month {
        2 if leap => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    };
    if !(1..=12).contains(&month)
        || !(1..=days_in_month).contains(&day)
        || hour > 23
        || minute > 59
        || second > 60
    {
        return None;
    }
    let mut rest = &text[19..];
    let mut fraction = 0.0;
    if let Some(after) = rest.strip_prefix('.') {
        let digits = after
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(after.len());
        if digits == 0 {
            return None;
        }
        fraction = format!("0.{}", &after[..digits]).parse().ok()?;
        rest = &after[digits..];
    }
    let offset_s = match rest.as_bytes() {
        b"Z" | b"z" => 0,
        &[sign @ (b'+' | b'-'), h1, h2, b':', m1, m2] => {
            let digit = |c: u8| c.is_ascii_digit().then(|| i64::from(c - b'0'));
            let (h, m) = (digit(h1)? * 10 + digit(h2)?, digit(m1)? * 10 + digit(m2)?);
            if h > 23 || m > 59 {
                return None;
            }
            let sign = if sign == b'-' { -1 } else { 1 };
            sign * (h * 3600 + m * 60)
        }
        _ => return None,
    };
    let days = days_from_civil(year, month, day);
    let seconds = days * 86_400 + hour * 3600 + minute * 60 + second - offset_s;
    Some(seconds as f64 + fraction)
}

/// Seconds since the epoch of an HTTP date (RFC 9110 §5.6.7), as a `Retry-After` or `Date`
/// header writes it: the preferred IMF-fixdate (`Sun, 06 Nov 1994 08:49:37 GMT`) and the two
/// obsolete forms recipients must still read, RFC 850 (`Sunday, 06-Nov-94 08:49:37 GMT`, a
/// two-digit year below 70 read as 20xx, as Python's `email.utils` does) and asctime
/// (`Sun Nov  6 08:49:37 1994`); `None` for anything else.
pub fn parse_http_date(text: &str) -> Option<f64> {
    const DAYS: [&str; 7] = ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"];
    const LONG_DAYS: [&str; 7] = [
        "Monday",
        "Tuesday",
        "Wednesday",
        "Thursday",
        "Friday",
        "Saturday",
        "Sunday",
    ];
    let parts: Vec<&str> = text.split(' ').collect();
    let (day, month, year, clock) = match parts[..] {
        [weekday, day, month, year, clock, "GMT"]
            if weekday.strip_suffix(',').is_some_and(|w| DAYS.contains(&w)) =>
        {
            (day, month, year.to_owned(), clock)
        }
        [weekday, date, clock, "GMT"]
            if weekday
                .strip_suffix(',')
                .is_some_and(|w| LONG_DAYS.contains(&w)) =>
        {
            let [day, month, yy] = date.split('-').collect::<Vec<_>>()[..] else {
                return None;
            };
            let yy: u32 = yy.parse().ok().filter(|_| yy.len() == 2)?;
            (
                day,
                month,
                (if yy < 70 { 2000 + yy } else { 1900 + yy }).to_string(),
                clock,
            )
        }
        // asctime pads a one-digit day with a space: `Nov  6` splits into an empty part.
        [weekday, month, "", day, clock, year] if DAYS.contains(&weekday) && day.len() == 1 => {
            return parse_parts(&format!("0{day}"), month, year, clock);
        }
        [weekday, month, day, clock, year] if DAYS.contains(&weekday) => {
            (day, month, year.to_owned(), clock)
        }
        _ => return None,
    };
    parse_parts(day, month, &year, clock)
}

/// An HTTP date's day (two digits), month name, four-digit year and `hh:mm:ss` clock.
fn parse_parts(day: &str, month: &str, year: &str, clock: &str) -> Option<f64> {
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    if day.len() != 2 || year.len() != 4 || clock.len() != 8 || clock.contains('.') {
        return None;
    }
    let month = MONTHS.iter().position(|m| *m == month)? + 1;
    // The clock and the calendar are checked by the RFC 3339 reader.
    parse_rfc3339(&format!("{year}-{month:02}-{day}T{clock}Z"))
}

/// Days from 1970-01-01 to a proleptic Gregorian date (Howard Hinnant's algorithm).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_with_fractions_and_offsets_agree_with_known_epochs() {
        assert_eq!(parse_rfc3339("1970-01-01T00:00:00Z"), Some(0.0));
        let t = parse_rfc3339("2009-04-16T12:07:25.123+01:00").unwrap();
        assert!((t - 1_239_880_045.123).abs() < 1e-6, "{t}");
        assert_eq!(
            parse_rfc3339("2026-12-01T09:30:00-05:30"),
            Some(1_796_137_200.0)
        );
        assert_eq!(parse_rfc3339("2000-02-29T00:00:00Z"), Some(951_782_400.0));
        for bad in [
            "",
            "2026-13-01T00:00:00Z",
            "2026-02-30T00:00:00Z",
            "2026-02-29T00:00:00Z",
            "1900-02-29T00:00:00Z",
            "2026-04-31T00:00:00Z",
            "2026-12-01 00:00",
            "2026-12-01T00:00:00",
            "yesterday",
            // Not characters a byte index may split (it once panicked), nor an offset off the clock.
            "2026-12-01T09:30:00+0é00",
            "2026-12-01T09:30:00ééé",
            "2026-12-01T09:30:00.5é",
            "2026-12-01T09:30:01+99:99",
            "2026-12-01T09:30:01+24:00",
            "2026-12-01T09:30:01+-1:00",
            "2026-12-01T09:30:01+01:60",
        ] {
            assert_eq!(parse_rfc3339(bad), None, "{bad}");
        }
    }

    #[test]
    fn http_dates_read_in_their_fixed_form_only() {
        assert_eq!(
            parse_http_date("Sun, 06 Nov 1994 08:49:37 GMT"),
            Some(784_111_777.0)
        );
        assert_eq!(
            parse_http_date("Wed, 21 Oct 2026 07:28:00 GMT"),
            parse_rfc3339("2026-10-21T07:28:00Z")
        );
        // The two obsolete forms a recipient must still read.
        for old in ["Sunday, 06-Nov-94 08:49:37 GMT", "Sun Nov  6 08:49:37 1994"] {
            assert_eq!(parse_http_date(old), Some(784_111_777.0), "{old}");
        }
        assert_eq!(
            parse_http_date("Tuesday, 01-Dec-26 09:30:07 GMT"),
            parse_rfc3339("2026-12-01T09:30:07Z")
        );
        assert_eq!(
            parse_http_date("Thu Nov 26 08:49:37 2026"),
            parse_rfc3339("2026-11-26T08:49:37Z")
        );
        for bad in [
            "",
            "120",
            "Sunday, 06-Nov-1994 08:49:37 GMT",
            "Sun Nov 6 08:49:37 1994",
            "Sun, 06 Nov 1994 08:49:37 UTC",
            "Sun, 6 Nov 1994 08:49:37 GMT",
            "Sun, 31 Feb 1994 08:49:37 GMT",
            "Sun, 06 Nov 1994 08:49:37.5 GMT",
            "Sun, 06 Nox 1994 08:49:37 GMT",
            "Sun, 06 Nov 1994 24:49:37 GMT",
        ] {
            assert_eq!(parse_http_date(bad), None, "{bad}");
        }
    }
}
