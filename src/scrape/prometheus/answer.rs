//! Part of `scrape::prometheus`: the JSON answers of a Prometheus server's HTTP API, read
//! with serde_json — a range query's matrix and the series list — and its errors
//! (`{"status":"error","errorType":…,"error":…}`, with HTTP 400, 422 or 503) as typed
//! `ScrapeError`s. Values come as strings (`"1.5"`, `"NaN"`, `"+Inf"`, `"-Inf"`) and are read
//! with `str::parse`: every one the API writes is a float, non-finite ones included (`pages`
//! leaves those out); any other text refuses the answer. No I/O, no printing.

use crate::scrape::{cut, ScrapeError, MAX_MESSAGE_BYTES};
use serde::Deserialize;
use std::collections::BTreeMap;

/// A series' labels, `__name__` included.
pub type Labels = BTreeMap<String, String>;

/// One series of a matrix: its labels and its points (Unix ms, value).
#[derive(Clone, Debug, PartialEq)]
pub struct Series {
    /// Its labels.
    pub labels: Labels,
    /// Its points in time order: Unix milliseconds and the value (possibly non-finite).
    pub points: Vec<(i64, f64)>,
}

/// A successful answer: its data and the server's warnings.
#[derive(Clone, Debug, PartialEq)]
pub struct Answer<T> {
    /// The `data`.
    pub data: T,
    /// The answer's `warnings` (a query that touched too much, …).
    pub warnings: Vec<String>,
}

/// The envelope every API answer has.
#[derive(Deserialize)]
struct Envelope<T> {
    status: String,
    data: Option<T>,
    #[serde(rename = "errorType", default)]
    error_type: Option<String>,
    #[serde(default)]
    error: Option<String>,
    #[serde(default)]
    warnings: Vec<String>,
}

#[derive(Deserialize)]
struct Matrix {
    #[serde(rename = "resultType")]
    result_type: String,
    result: Vec<RawSeries>,
}

#[derive(Deserialize)]
struct RawSeries {
    metric: Labels,
    #[serde(default)]
    values: Vec<(f64, String)>,
}

/// The envelope of `body` (answered with HTTP `status`): its data on success; the server's
/// error as `Query`; a body that is not the API's JSON as `Status` (when not 200: a proxy's
/// page, a 404) or `NotApi`.
fn envelope<T: for<'de> Deserialize<'de>>(
    status: u16,
    body: &str,
) -> Result<Answer<T>, ScrapeError> {
    let parsed: Envelope<T> = match serde_json::from_str(body) {
        Ok(e) => e,
        Err(_) if status != 200 => return Err(ScrapeError::Status(status)),
        Err(e) => return Err(ScrapeError::NotApi(cut(&e.to_string(), MAX_MESSAGE_BYTES))),
    };
    match (parsed.status.as_str(), parsed.data) {
        ("success", Some(data)) => Ok(Answer {
            data,
            warnings: parsed.warnings,
        }),
        ("error", _) => Err(ScrapeError::Query {
            error_type: cut(&parsed.error_type.unwrap_or_default(), 64),
            error: cut(&parsed.error.unwrap_or_default(), MAX_MESSAGE_BYTES),
        }),
        ("success", None) => Err(ScrapeError::NotApi("a success without data".into())),
        (other, _) => Err(ScrapeError::NotApi(format!("status '{}'", cut(other, 32)))),
    }
}

/// A `/api/v1/query_range` answer: its series.
pub fn parse_matrix(status: u16, body: &str) -> Result<Answer<Vec<Series>>, ScrapeError> {
    let answer: Answer<Matrix> = envelope(status, body)?;
    if answer.data.result_type != "matrix" {
        return Err(ScrapeError::NotApi(format!(
            "result type '{}', not a matrix",
            cut(&answer.data.result_type, 32)
        )));
    }
    let mut series = Vec::with_capacity(answer.data.result.len());
    for raw in answer.data.result {
        let mut points = Vec::with_capacity(raw.values.len());
        for (t, v) in raw.values {
            let value = v.parse::<f64>().map_err(|_| {
                ScrapeError::NotApi(format!("a value '{}' that is not a number", cut(&v, 32)))
            })?;
            if !t.is_finite() {
                return Err(ScrapeError::NotApi("a time that is not a number".into()));
            }
            points.push(((t * 1000.0).round() as i64, value));
        }
        series.push(Series {
            labels: raw.metric,
            points,
        });
    }
    Ok(Answer {
        data: series,
        warnings: answer.warnings,
    })
}

/// A `/api/v1/series` answer: the label sets.
pub fn parse_series(status: u16, body: &str) -> Result<Answer<Vec<Labels>>, ScrapeError> {
    envelope(status, body)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_matrix_is_read_with_every_value_the_api_writes() {
        let body = r#"{"status":"success","data":{"resultType":"matrix","result":[
            {"metric":{"__name__":"vllm:num_requests_running","instance":"h:1","job":"sim"},
             "values":[[1796155532,"3"],[1796155532.5,"NaN"],[1796155533.001,"+Inf"],
                       [1796155534,"-Inf"],[1796155535,"1e-3"]]},
            {"metric":{},"values":[]}]}}"#;
        let a = parse_matrix(200, body).unwrap();
        assert!(a.warnings.is_empty());
        assert_eq!(a.data.len(), 2);
        let s = &a.data[0];
        assert_eq!(s.labels["job"], "sim");
        let times: Vec<i64> = s.points.iter().map(|p| p.0).collect();
        assert_eq!(
            times,
            [
                1796155532000,
                1796155532500,
                1796155533001,
                1796155534000,
                1796155535000
            ]
        );
        assert_eq!(s.points[0].1, 3.0);
        assert!(s.points[1].1.is_nan());
        assert_eq!(s.points[2].1, f64::INFINITY);
        assert_eq!(s.points[3].1, f64::NEG_INFINITY);
        assert_eq!(s.points[4].1, 0.001);
        assert!(a.data[1].points.is_empty());
    }

    #[test]
    fn an_empty_result_and_warnings_are_an_answer() {
        let body = r#"{"status":"success","data":{"resultType":"matrix","result":[]},
                       "warnings":["too many"]}"#;
        let a = parse_matrix(200, body).unwrap();
        assert!(a.data.is_empty());
        assert_eq!(a.warnings, ["too many"]);
        let s = parse_series(
            200,
            r#"{"status":"success","data":[{"__name__":"up","job":"a"}]}"#,
        )
        .unwrap();
        assert_eq!(s.data[0]["job"], "a");
        let none = parse_series(200, r#"{"status":"success","data":[]}"#).unwrap();
        assert!(none.data.is_empty());
    }

    #[test]
    fn errors_are_typed_with_the_servers_words() {
        let bad = r#"{"status":"error","errorType":"bad_data","error":"1:5: parse error: unclosed left parenthesis"}"#;
        let e = parse_matrix(400, bad).unwrap_err();
        assert_eq!(
            e,
            ScrapeError::Query {
                error_type: "bad_data".into(),
                error: "1:5: parse error: unclosed left parenthesis".into()
            }
        );
        assert_eq!(e.kind_key(), "query_bad_data");
        assert!(e.to_string().contains("unclosed left parenthesis"), "{e}");
        let timeout = r#"{"status":"error","errorType":"timeout","error":"query timed out"}"#;
        assert_eq!(
            parse_matrix(503, timeout).unwrap_err().kind_key(),
            "query_timeout"
        );
        // Not the API's JSON: a 404 page, an HTML page with 200, another result type.
        assert_eq!(
            parse_matrix(404, "404 page not found"),
            Err(ScrapeError::Status(404))
        );
        for (body, want) in [
            ("<html></html>", "expected value"),
            (
                r#"{"status":"success","data":{"resultType":"vector","result":[]}}"#,
                "not a matrix",
            ),
            (
                r#"{"status":"success","data":{"resultType":"matrix","result":[{"metric":{},"values":[[1,"x"]]}]}}"#,
                "not a number",
            ),
            (r#"{"status":"success"}"#, "without data"),
            (r#"{"status":"maybe","data":null}"#, "maybe"),
        ] {
            let e = parse_matrix(200, body).unwrap_err();
            assert!(
                matches!(&e, ScrapeError::NotApi(m) if m.contains(want)),
                "{body}: {e:?}"
            );
        }
    }
}
