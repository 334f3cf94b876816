//! eKuiper's documented examples (github.com/lf-edge/ekuiper, docs/en_US/), each under the
//! page it comes from. Those the dialect here refuses are listed apart, with the reason.

use super::{parse, parse_expr};
use crate::ast::Statement;

fn parses(examples: &[&str]) {
    for sql in examples {
        if let Err(e) = parse(sql) {
            panic!("{sql}\n  {e}");
        }
    }
}

fn parse_exprs(examples: &[&str]) {
    for text in examples {
        if let Err(e) = parse_expr(text) {
            panic!("{text}\n  {e}");
        }
    }
}

/// `(example, the start of the error)`.
fn refused(examples: &[(&str, &str)]) {
    for (sql, why) in examples {
        match parse(sql) {
            Ok(s) => panic!("{sql}: parsed as {s:?}"),
            Err(e) => assert!(e.to_string().contains(why), "{sql}: {e}"),
        }
    }
}

/// sqls/windows.md
#[test]
fn windows() {
    parses(&[
        "SELECT count(*) FROM demo GROUP BY ID, TUMBLINGWINDOW(ss, 10);",
        "SELECT count(*) FROM demo GROUP BY ID, HOPPINGWINDOW(ss, 10, 5);",
        "SELECT count(*) FROM demo GROUP BY ID, SLIDINGWINDOW(mi, 1);",
        "SELECT count(*) FROM demo GROUP BY ID, SLIDINGWINDOW(ss, 5, 5);",
        "SELECT count(*) FROM demo GROUP BY ID, SESSIONWINDOW(mi, 2, 1);",
        "SELECT * FROM demo WHERE temperature > 20 GROUP BY COUNTWINDOW(5)",
        "SELECT * FROM demo WHERE temperature > 20 GROUP BY COUNTWINDOW(5,1) HAVING COUNT(*) > 2",
        "SELECT * FROM demo GROUP BY COUNTWINDOW(3,1) FILTER(where revenue > 100)",
        "SELECT * FROM demo GROUP BY SlidingWindow(ss,1) FILTER(where revenue > 100) \
         OVER(when revenue > 200)",
        "SELECT * FROM demo GROUP BY SlidingWindow(ss,1) OVER(when revenue > 200)",
        "CREATE STREAM demo (
                    color STRING,
                    size BIGINT,
                    ts BIGINT
                ) WITH (DATASOURCE=\"demo\", FORMAT=\"json\", KEY=\"ts\", TIMESTAMP=\"ts\")",
    ]);
    // The state window has no place in the tree (WindowKind).
    refused(&[
        (
            "SELECT * from demo group by statewindow(a > 1, a > 5)",
            "STATEWINDOW",
        ),
        (
            "SELECT * from demo group by statewindow(a > 1)",
            "STATEWINDOW",
        ),
        (
            "SELECT * from demo group by statewindow(a = 1, a = 5) over (partition by b)",
            "STATEWINDOW",
        ),
    ]);
}

/// sqls/streams.md, guide/streams/overview.md (whose examples leave out `CREATE STREAM`,
/// put back here) and sqls/lexical_elements.md.
#[test]
fn streams() {
    parses(&[
        "CREATE STREAM my_stream ()
         WITH ( datasource = \"topic/temperature\", FORMAT = \"json\", KEY = \"id\")",
        "CREATE STREAM my_stream
           (id bigint, name string, score float)
         WITH ( datasource = \"topic/temperature\", FORMAT = \"json\", KEY = \"id\");",
        "CREATE STREAM demo (
                USERID BIGINT,
                FIRST_NAME STRING,
                LAST_NAME STRING,
                NICKNAMES ARRAY(STRING),
                Gender BOOLEAN,
                ADDRESS STRUCT(STREET_NAME STRING, NUMBER BIGINT),
            ) WITH (DATASOURCE=\"test/\", FORMAT=\"JSON\", KEY=\"USERID\", CONF_KEY=\"demo\");",
        "CREATE STREAM demo
         () WITH (DATASOURCE=\"topic\", CONF_KEY=\"myconf\");",
        "CREATE STREAM demo
         () WITH (DATASOURCE=\"topic\", CONF_KEY=\"myconf\", EXTRA=\"{\\\"conf2\\\":1}\");",
        "CREATE STREAM demo (USERID BIGINT
            ) WITH (DATASOURCE=\"test\", FORMAT=\"JSON\", KEY=\"USERID\", SHARED=\"true\");",
        "CREATE STREAM schemaless_stream
           ()
         WITH ( datasource = \"topic/temperature\", FORMAT = \"json\", KEY = \"id\");",
        "CREATE STREAM demoBin (
            image BYTEA
         ) WITH (DATASOURCE=\"test/\", FORMAT=\"BINARY\");",
        "CREATE
         STREAM temp_sensor (
            temperature FLOAT,
            humidity FLOAT
         ) WITH (DATASOURCE=\"sensor/data\", FORMAT=\"json\", TEMP=\"true\");",
        "CREATE STREAM version_stream
         () WITH ( datasource = \"topic\", FORMAT = \"json\", VERSION = \"1756436910\");",
        "create stream demo () WITH (DATASOURCE=\"demo\", FORMAT=\"JSON\")",
        "create stream sensor1 () WITH (DATASOURCE=\"home/+/sensor1\", FORMAT=\"JSON\", \
         TYPE=\"memory\")",
        "CREATE STREAM `stream` (
                    USERID BIGINT,
                    FIRST_NAME STRING,
                    LAST_NAME  STRING,
                    NICKNAMES  ARRAY(STRING),
                    Gender     BOOLEAN,
                    `地址`      STRUCT(STREET_NAME STRING, NUMBER BIGINT),
                ) WITH (DATASOURCE=\"users\", FORMAT=\"JSON\");",
    ]);
    let Ok(Statement::CreateStream(def)) = parse(
        "CREATE STREAM demo () WITH (DATASOURCE=\"topic\", CONF_KEY=\"myconf\", \
         EXTRA=\"{\\\"conf2\\\":1}\")",
    ) else {
        panic!()
    };
    assert_eq!(def.options.raw[2], ("EXTRA".into(), "{\"conf2\":1}".into()));
    refused(&[
        (
            "CREATE STREAM demo () WITH (DATASOURCE=\"test/\", FORMAT=\"protobuf\", \
             SCHEMAID=\"proto1.Book\");",
            "unsupported FORMAT \"protobuf\"",
        ),
        (
            "CREATE STREAM demo (
                temperature FLOAT DEFAULT 12.0,
                status STRING DEFAULT \"unknown\"
             ) WITH (DATASOURCE=\"sensor/data\", FORMAT=\"JSON\", STRICT_VALIDATION=\"true\");",
            "DEFAULT values are not supported",
        ),
    ]);
}

/// sqls/query_language_elements.md, sqls/lexical_elements.md, sqls/data_types.md and
/// guide/rules/*.md.
#[test]
fn queries() {
    parses(&[
        "select * from demo;",
        "select a + 1 as sum1, sum1 + 1 as sum2 from demo",
        "select a + 1 as a, a + 2 as sum2 from demo",
        "select * from demo where a > 10;",
        "select * from demo where a > 10 and a < 15;",
        "select * from demo where a > 10 or a < 15;",
        "select * from demo where a between 10 and 15;",
        "select * from demo where a like \"prefix%\"",
        "select * from demo group by a, countwindow(5);",
        "select * from demo group by countwindow(5) having a > 10;",
        "select * from demo group by countwindow(5) order by a ASC;",
        "select * from demo where a > 10 group by countwindow(5) limit 10;",
        "SELECT CASE color
            WHEN \"red\" THEN 1
            WHEN \"yellow\" THEN 2
            ELSE 3 END as colorInteger,
         humidity FROM tbl",
        "SELECT CASE
            WHEN size < 150 THEN \"S\"
            WHEN size < 170 THEN \"M\"
            WHEN size < 175 THEN \"L\"
            ELSE \"XL\" END as sizeLabel
         FROM tbl",
        "SELECT `select`, `and` from demo",
        "SELECT `a-b`, `hello world`, `中文Chinese` from demo",
        "SELECT * FROM demo1 where `from`=\"device1\"",
        "SELECT TRUE AS field1 FROM demo",
        "Select temperature * 2 from demo where temperature > 20",
        "SELECT count(*), stddev(a) from demo group by countwindow(4)",
        "SELECT avg(temperature) AS temperature, meta(*) AS edgex_meta FROM demo \
         GROUP BY TUMBLINGWINDOW(ss, 10)",
        "SELECT avg(temperature) FROM sensor1 GROUP BY CountWindow(10)",
        "select sum(b) from demo group by tumblingwindow(ss, 10) having avg(a) > 0;",
        "select avg(a) from stream group by tumblingWindow(ss,10),b;",
        "select sum(b) from demo group by tumblingwindow(ss, 10),c  having avg(a) > 0; ",
    ]);
    refused(&[
        ("select * except(a,b) from demo;", "EXCEPT/REPLACE"),
        ("select * replace(a+b as c) from demo;", "EXCEPT/REPLACE"),
        (
            "select * from stream1 left join stream2 on stream1.column = stream2.column \
             group by countwindow(5);",
            "joins are not supported",
        ),
        (
            "select * from stream1 cross outer join on stream2 stream1.column = \
             stream2.column group by countwindow(5);",
            "joins are not supported",
        ),
        (
            "SELECT demo.temperature, demo1.temp FROM demo left join demo1 on \
             demo.timestamp = demo1.timestamp where demo.temperature > demo1.temp \
             GROUP BY demo.temperature, HOPPINGWINDOW(ss, 20, 10)",
            "joins are not supported",
        ),
        // A topic is not a stream name: a stream's DATASOURCE names its topic.
        (
            "SELECT temp AS t, name FROM topic/sensor1 WHERE name = \"dname\" \
             GROUP BY name HAVING count(name) > 3",
            "expected WHERE",
        ),
    ]);
}

/// sqls/json_expr.md
#[test]
fn json_expressions() {
    parses(&[
        "SELECT demo.age FROM demo",
        "SELECT demo.name->first FROM demo",
        "SELECT demo.name.first FROM demo",
        "SELECT name.first AS fname FROM demo",
        "SELECT name->first AS fname FROM demo",
        "SELECT ops->functionA.numArgs AS num FROM demo",
        "SELECT children FROM demo",
        "SELECT children[0] FROM demo",
        "SELECT children[1] FROM demo",
        "SELECT children[-1] FROM demo",
        "SELECT children[-2] FROM demo",
        "SELECT d.friends[0]->last FROM demo AS d",
        "SELECT children[0:1] FROM demo",
        "SELECT children[1:-1] FROM demo",
        "SELECT children[0:-1] FROM demo",
        "SELECT children[:] FROM demo",
        "SELECT children[:2] FROM demo",
        "SELECT children[x:y] FROM demo",
        "SELECT children[x+1:y] FROM demo",
        "SELECT followers->Group1[:1]->first FROM demo",
        "SELECT json_path_query(followers, \"$.Group1[*].last\") FROM demo",
        "SELECT name->last FROM demo where json_path_exists(followers, \"$.Group1[? @.age>30]\")",
        "SELECT json_path_exists(followers, \"$.Group1[? @.age>30].last\") FROM demo",
        "SELECT json_path_exists(followers, \"$[\\\"my.follower\\\"]\") FROM demo",
        // Documented as not supported yet, but plain paths.
        "SELECT friends[:1]->first FROM demo",
    ]);
    // Projections, documented as not supported yet.
    refused(&[
        ("SELECT demo.friends[*]->first FROM demo", "projections"),
        ("SELECT ops->*->numArgs FROM demo", "projections"),
    ]);
}

/// sqls/functions/*.md: the statements, then the call forms that are expressions.
#[test]
fn functions() {
    parses(&[
        // aggregate_functions.md
        "SELECT collect(a) as r1 FROM test GROUP BY TumblingWindow(ss, 10)",
        "SELECT collect(*) as r1 FROM test GROUP BY TumblingWindow(ss, 10)",
        "SELECT collect(*)[1]->a as r1 FROM test GROUP BY TumblingWindow(ss, 10)",
        "SELECT merge_agg(*) as r1 FROM test GROUP BY TumblingWindow(ss, 10)",
        "SELECT merge_agg(a) as r1 FROM test GROUP BY TumblingWindow(ss, 10)",
        "SELECT deduplicate(a, true) as r1 FROM test GROUP BY TumblingWindow(ss, 10)",
        "SELECT deduplicate(a, false)->a as r1 FROM demo GROUP BY SlidingWindow(hh, 1)",
        // analytic_functions.md
        "select lag(Status) as Status, ts - lag(ts, 1, ts, true) OVER (WHEN \
         had_changed(true, statusCode)) as duration from demo",
        "SELECT CHANGED_COLS(\"\", true, temperature) FROM demo",
        "SELECT CHANGED_COLS(\"c_\", true, temperature, humidity) FROM demo",
        "SELECT CHANGED_COLS(\"c_\", false, *) FROM demo",
        "SELECT CHANGED_COLS(\"t\", true, avg(temperature)) FROM demo GROUP BY CountWindow(2)",
        "SELECT ts, temperature, humidity FROM demo
         WHERE HAD_CHANGED(true, temperature, humidity) = true",
        "SELECT ts, temperature, humidity FROM demo
         WHERE HAD_CHANGED(true, temperature) = true AND HAD_CHANGED(true, humidity) = false",
        "SELECT CHANGED_COL(true, temperature) AS myTemp, CHANGED_COL(true, humidity) AS myHum \
         FROM demo",
        "SELECT ts, temperature, humidity FROM demo
         WHERE CHANGED_COL(true, temperature) > 24",
        // custom_functions.md
        "SELECT echo(avg) as r1 FROM test;",
        "SELECT countPlusOne(avg,maxWidth, maxHeight) as r1 FROM test;",
        "SELECT accumulateWordCount(avg,sep) as r1 FROM test;",
        "SELECT resize(avg,width,height) as r1 FROM test;",
        "SELECT geohashEncode(la,lo) FROM test",
        "SELECT geohashNeighborInt(hash,direction) FROM test",
        "SELECT labelImage(self) FROM tfdemo",
        "SELECT tfLite(model_name, input_data) FROM tfdemo",
        // multi_row_functions.md
        "SELECT unnest(a) FROM demo",
        "SELECT unnest(a), b FROM demo",
        "SELECT extract(data) FROM demo",
    ]);
    parse_exprs(&[
        "avg(col)",
        "count(*)",
        "count(col)",
        "collect(*)",
        "last_value(*, true)",
        "last_value(col, false)",
        "percentile(col, percentile)",
        "last_agg_hit_count()",
        "lag(temperature)",
        "lag(temperature) OVER (PARTITION BY deviceId)",
        "changed_col(true, col)",
        "acc_sum(a)",
        "acc_count(a, a > 1, a < 0)",
        "cardinality(array)",
        "array_position(array, value)",
        "date_calc('2019-01-01', '1h30m10s100ms200us300ns')",
        "format_time(time, format)",
        "md5(col)",
        "json_path_query_first(col, json_path)",
        "atan2(col1, col2)",
        "pi()",
        "round(42.4382, 2)",
        "conv('a',16,2)",
        "conv(-17,10,-18)",
        "object_construct(\"a\", 1, \"b\", 2)",
        "isNull(col)",
        "coalesce(expr1, expr2)",
        "newuuid()",
        "event_time()",
        "mqtt(topic)",
        "meta(topic)",
        "meta(src1.device)",
        "meta(src1.reading.device.name)",
        "window_start()",
        "window_end()",
        "get_keyed_state(key, dataType, defaultValue)",
        "delay(delayTime, returnVal)",
        "lpad(col, 2)",
        "split_value(col, str_splitter, index)",
        "cast(col, dataType)",
        "convert_tz(col, \"Asia/Shanghai\")",
        "trunc(dec, int)",
        "row_number()",
    ]);
    // A SELECT without FROM (string_functions.md shows one): every rule reads a stream.
    refused(&[(
        "SELECT format(12332.1234567, 4,\"en_US\");",
        "expected AS, ',' or FROM",
    )]);
}
