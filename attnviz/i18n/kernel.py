"""Messages of the kernel-attention page and the kernels."""

from __future__ import annotations

from attnviz.i18n import Text as _

KERNEL: dict[str, _] = {
    "kernel.gaussian.label": _("Gaussian", "高斯核", "高斯核"),
    "kernel.gaussian.explanation": _(
        "Smooth bell: every key gets some weight, nearer keys much more.",
        "平滑的钟形：每个键都有一些权重，越近的键权重越大。",
        "平滑的鐘形：每個鍵都有一些權重，越近的鍵權重越大。",
    ),
    "kernel.laplace.label": _("Laplace", "拉普拉斯核", "拉普拉斯核"),
    "kernel.laplace.explanation": _(
        "A sharper peak and heavier tails than the Gaussian.",
        "比高斯核峰更尖、尾部更厚。",
        "比高斯核峰更尖、尾部更厚。",
    ),
    "kernel.boxcar.label": _("Boxcar", "矩形核", "矩形核"),
    "kernel.boxcar.explanation": _(
        "Equal weight to every key within σ of the query, none beyond: a moving average.",
        "与查询距离在 σ 以内的键权重相同，超出的为零：即移动平均。",
        "與查詢距離在 σ 以內的鍵權重相同，超出的為零：即移動平均。",
    ),
    "kernel.epanechnikov.label": _("Epanechnikov", "Epanechnikov 核", "Epanechnikov 核"),
    "kernel.epanechnikov.explanation": _(
        "A parabola that reaches zero at distance σ: keys farther than σ are ignored.",
        "一条在距离 σ 处降到零的抛物线：比 σ 更远的键被忽略。",
        "一條在距離 σ 處降到零的拋物線：比 σ 更遠的鍵被忽略。",
    ),
    "kernel.preset": _("Preset", "预设", "預設"),
    "kernel.data_seed": _("Data seed", "数据种子", "資料種子"),
    "kernel.training_count": _("Training points", "训练点数", "訓練點數"),
    "kernel.points_heading": _(
        "**Training points** (keys and their values)",
        "**训练点**（键和它们的值）",
        "**訓練點**（鍵和它們的值）",
    ),
    "kernel.key_column": _("key (x)", "键 (x)", "鍵 (x)"),
    "kernel.value_column": _("value (y)", "值 (y)", "值 (y)"),
    "kernel.empty_cell": _(
        "Training points, row {row}: a key or value is empty; type a number or delete the row.",
        "训练点第 {row} 行：键或值为空；请输入数字或删除该行。",
        "訓練點第 {row} 列：鍵或值為空；請輸入數字或刪除該列。",
    ),
    "kernel.no_points": _(
        "Add at least one training point (a key and its value).",
        "请至少添加一个训练点（一个键和它的值）。",
        "請至少新增一個訓練點（一個鍵和它的值）。",
    ),
    "kernel.too_many_points": _(
        "{count} training points; the limit is 512.",
        "{count} 个训练点，上限是 512。",
        "{count} 個訓練點，上限是 512。",
    ),
    "kernel.out_of_range": _(
        "Training points must lie within ±1e6.",
        "训练点必须在 ±1e6 以内。",
        "訓練點必須在 ±1e6 以內。",
    ),
    "kernel.queries": _("Query points (comma-separated)", "查询点（用逗号分隔）", "查詢點（用逗號分隔）"),
    "kernel.queries_example": _("{error}. Example: 57, 52.5", "{error}。例如：57, 52.5", "{error}。例如：57, 52.5"),
    "kernel.kernel": _("Kernel", "核函数", "核函數"),
    "kernel.learned_curve": _("learned σ = {sigma}", "学到的 σ = {sigma}", "學到的 σ = {sigma}"),
    "kernel.no_support": _(
        "No training key lies inside the {kernel} window of query {queries}: no prediction there. Widen σ.",
        "查询 {queries} 的 {kernel} 窗口内没有训练键：那里没有预测。请调大 σ。",
        "查詢 {queries} 的 {kernel} 視窗內沒有訓練鍵：那裡沒有預測。請調大 σ。",
    ),
    "kernel.predictions": _("**Predictions**: ", "**预测**：", "**預測**："),
    "kernel.weights_title": _(
        "Attention weights (queries × training keys)",
        "注意力权重（查询 × 训练键）",
        "注意力權重（查詢 × 訓練鍵）",
    ),
    "kernel.learn_heading": _("Learn the bandwidth", "学习带宽", "學習頻寬"),
    "kernel.learn_caption": _(
        "Gradient descent on the leave-one-out squared error: each training point is predicted from the others "
        "(otherwise σ → 0 just memorises the data).",
        "对留一法平方误差做梯度下降：每个训练点由其余的点来预测（否则 σ → 0 只会把数据背下来）。",
        "對留一法平方誤差做梯度下降：每個訓練點由其餘的點來預測（否則 σ → 0 只會把資料背下來）。",
    ),
    "kernel.learn_button": _("Learn σ from the training points", "从训练点学习 σ", "從訓練點學習 σ"),
    "kernel.learn_help": _(
        "Not available for the boxcar kernel (no gradient) or fewer than 2 points.",
        "矩形核（没有梯度）或少于 2 个点时不可用。",
        "矩形核（沒有梯度）或少於 2 個點時不可用。",
    ),
    "kernel.training": _("Training…", "训练中…", "訓練中…"),
    "kernel.epoch": _(
        "Epoch {epoch}/200 · loss {loss}", "第 {epoch}/200 轮 · 损失 {loss}", "第 {epoch}/200 輪 · 損失 {loss}"
    ),
    "kernel.learned": _(
        "Learned σ = {sigma} (loss {first} → {last}).",
        "学到的 σ = {sigma}（损失 {first} → {last}）。",
        "學到的 σ = {sigma}（損失 {first} → {last}）。",
    ),
    "kernel.use_learned": _("Use the learned σ", "使用学到的 σ", "使用學到的 σ"),
    "kernel.query_to_explain": _("Query to explain", "要讲解的查询", "要講解的查詢"),
}
