"""Words inside the figures: axis titles, hover labels, legend entries, titles of the built-in charts."""

from __future__ import annotations

from attnviz.i18n import Text as _

FIGURES: dict[str, _] = {
    "fig.query": _("query", "查询", "查詢"),
    "fig.key": _("key", "键", "鍵"),
    "fig.weight": _("weight", "权重", "權重"),
    "fig.score": _("score", "分数", "分數"),
    "fig.keys": _("keys", "键", "鍵"),
    "fig.queries": _("queries", "查询", "查詢"),
    "fig.masked": _(
        "masked: cannot attend (weight exactly 0)",
        "被掩蔽：不能关注（权重恰好为 0）",
        "被遮罩：不能關注（權重恰好為 0）",
    ),
    "fig.no_support": _("no key inside the kernel window", "核窗口内没有键", "核視窗內沒有鍵"),
    "fig.attention_weights": _("Attention weights", "注意力权重", "注意力權重"),
    "fig.row": _("row", "行", "列"),
    "fig.column": _("column", "列", "行"),
    "fig.value": _("value", "值", "值"),
    "fig.features": _("features", "特征", "特徵"),
    "fig.head_n": _("head {n}", "头 {n}", "頭 {n}"),
    "fig.layer_n": _("layer {n}", "第 {n} 层", "第 {n} 層"),
    "fig.training_data": _("training data (keys, values)", "训练数据（键，值）", "訓練資料（鍵，值）"),
    "fig.key_x": _("key x", "键 x", "鍵 x"),
    "fig.value_y": _("value y", "值 y", "值 y"),
    "fig.true_function": _("true function", "真实函数", "真實函數"),
    "fig.true_y": _("true y", "真实 y", "真實 y"),
    "fig.prediction": _("prediction", "预测", "預測"),
    "fig.query_x": _("query x", "查询 x", "查詢 x"),
    "fig.x_axis": _("x (queries and keys)", "x（查询和键）", "x（查詢和鍵）"),
    "fig.y_axis": _("y (values)", "y（值）", "y（值）"),
    "fig.nadaraya_watson": _("Nadaraya–Watson regression", "Nadaraya–Watson 回归", "Nadaraya–Watson 迴歸"),
    "fig.loss_title": _("Leave-one-out loss", "留一法损失", "留一法損失"),
    "fig.epoch": _("epoch", "轮次", "輪次"),
    "fig.loss": _("loss", "损失", "損失"),
    "fig.model_view": _(
        "Model view: every layer and head (queries down, keys across)",
        "模型视图：所有层和头（纵向为查询，横向为键）",
        "模型視圖：所有層和頭（縱向為查詢，橫向為鍵）",
    ),
    "fig.layer_query": _("layer {layer}, query {query}", "第 {layer} 层，查询 {query}", "第 {layer} 層，查詢 {query}"),
    "fig.head_key": _("head {head}, key {key}", "头 {head}，键 {key}", "頭 {head}，鍵 {key}"),
    "fig.neuron_view": _(
        "Neuron view: how '{token}' weighs every key",
        "神经元视图：'{token}' 如何给每个键分配权重",
        "神經元視圖：'{token}' 如何給每個鍵分配權重",
    ),
    "fig.keys_kj": _("keys k_j", "键 k_j", "鍵 k_j"),
    "fig.products": _("q ∘ k_j (each row sums to q·k_j)", "q ∘ k_j（每行之和为 q·k_j）", "q ∘ k_j（每列之和為 q·k_j）"),
    "fig.query_q": _("query q", "查询 q", "查詢 q"),
    "fig.your_guess": _("your guess", "你的猜测", "你的猜測"),
    "fig.true_weight": _("true weight", "真实权重", "真實權重"),
}
