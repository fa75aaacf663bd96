"""Messages of "show your work": the steps, their notes and their tables' columns."""

from __future__ import annotations

from attnviz.i18n import Text as _

EXPLAIN: dict[str, _] = {
    "explain.score": _(
        "1. Score the query '{query}' against every key",
        "1. 给查询 '{query}' 与每个键打分",
        "1. 給查詢 '{query}' 與每個鍵打分",
    ),
    "explain.first_key": _("First key worked out:", "第一个键的算式：", "第一個鍵的算式："),
    "explain.scale": _("2. Scale and apply the temperature", "2. 缩放并除以温度", "2. 縮放並除以溫度"),
    "explain.scale_note": _(
        "Scale = {scale}, temperature T = {temperature}.",
        "缩放系数 = {scale}，温度 T = {temperature}。",
        "縮放係數 = {scale}，溫度 T = {temperature}。",
    ),
    "explain.mask": _(
        "3. Mask the keys this query may not see", "3. 掩蔽这个查询不能看的键", "3. 遮罩這個查詢不能看的鍵"
    ),
    "explain.mask_formula": _("for masked keys, so ", "（被掩蔽的键），因此 ", "（被遮罩的鍵），因此 "),
    "explain.masked": _("Masked: {keys}", "被掩蔽：{keys}", "被遮罩：{keys}"),
    "explain.none_masked": _(
        "No key is masked for this query.", "这个查询没有被掩蔽的键。", "這個查詢沒有被遮罩的鍵。"
    ),
    "explain.softmax": _(
        "4. Softmax: exponentiate and normalise", "4. Softmax：取指数再归一化", "4. Softmax：取指數再正規化"
    ),
    "explain.softmax_note": _(
        "m = {top}; sum of the exponentials: {total}. Subtracting the maximum m changes nothing in the result but "
        "keeps the exponentials from overflowing.",
        "m = {top}；指数之和：{total}。减去最大值 m 不改变结果，但能防止指数溢出。",
        "m = {top}；指數之和：{total}。減去最大值 m 不改變結果，但能防止指數溢位。",
    ),
    "explain.all_masked": _(
        "Every key is masked: the query attends to nothing, all weights are 0 and its output is the zero vector.",
        "所有键都被掩蔽：这个查询什么都不关注，所有权重为 0，输出是零向量。",
        "所有鍵都被遮罩：這個查詢什麼都不關注，所有權重為 0，輸出是零向量。",
    ),
    "explain.weighted_sum": _("5. Weighted sum of the values", "5. 值的加权和", "5. 值的加權和"),
    "explain.key": _("key", "键", "鍵"),
    "explain.score_column": _("score a(q, k)", "分数 a(q, k)", "分數 a(q, k)"),
    "explain.score_short": _("score", "分数", "分數"),
    "explain.logit": _("logit z", "logit z", "logit z"),
    "explain.allowed": _("allowed", "允许", "允許"),
    "explain.yes": _("yes", "是", "是"),
    "explain.no_masked": _("no (masked)", "否（被掩蔽）", "否（被遮罩）"),
    "explain.weight": _("weight α", "权重 α", "權重 α"),
    "explain.distance": _(
        "1. Distance from the query to every key, scaled by the bandwidth σ",
        "1. 查询到每个键的距离，再除以带宽 σ",
        "1. 查詢到每個鍵的距離，再除以頻寬 σ",
    ),
    "explain.distance_note": _(
        "Query q = {query}, σ = {sigma}.", "查询 q = {query}，σ = {sigma}。", "查詢 q = {query}，σ = {sigma}。"
    ),
    "explain.kernel_value": _(
        "2. Kernel value of each key ({kernel})", "2. 每个键的核函数值（{kernel}）", "2. 每個鍵的核函數值（{kernel}）"
    ),
    "explain.normalise": _("3. Normalise: the weights sum to 1", "3. 归一化：权重之和为 1", "3. 正規化：權重之和為 1"),
    "explain.kernel_sum": _("Sum of the kernel values: {total}.", "核函数值之和：{total}。", "核函數值之和：{total}。"),
    "explain.no_support": _(
        "No key lies inside the kernel window: there is nothing to average, so no prediction here.",
        "没有键落在核窗口内：没有可以平均的东西，所以这里没有预测。",
        "沒有鍵落在核視窗內：沒有可以平均的東西，所以這裡沒有預測。",
    ),
    "explain.prediction": _(
        "4. Prediction: weighted average of the values", "4. 预测：值的加权平均", "4. 預測：值的加權平均"
    ),
    "explain.prediction_note": _(
        "f(q) = {terms} = {prediction} (terms with weight below 0.0001 left out).",
        "f(q) = {terms} = {prediction}（权重小于 0.0001 的项已省略）。",
        "f(q) = {terms} = {prediction}（權重小於 0.0001 的項已省略）。",
    ),
    "explain.undefined": _(
        "Undefined: no key has any weight.", "无定义：没有任何键有权重。", "無定義：沒有任何鍵有權重。"
    ),
}
