"""Every text of the interface, in English, Simplified Chinese and Traditional Chinese (see attnviz.i18n)."""

from __future__ import annotations

from attnviz.i18n import Text
from attnviz.i18n.attention import ATTENTION
from attnviz.i18n.errors import ERRORS
from attnviz.i18n.explain import EXPLAIN
from attnviz.i18n.figures import FIGURES
from attnviz.i18n.kernel import KERNEL
from attnviz.i18n.model import MODEL
from attnviz.i18n.presets import PRESETS

CATALOGUE: dict[str, Text] = {
    # ----- the frame: sidebar, language, links -------------------------------------------------------------------
    "frame.sidebar": Text(
        "attnviz — attention mechanisms you can see. Every control is saved in the link: share it to reproduce "
        "this page exactly.",
        "attnviz：看得见的注意力机制。每个控件都保存在链接里：分享链接即可原样重现本页。",
        "attnviz：看得見的注意力機制。每個控制項都保存在連結裡：分享連結即可原樣重現本頁。",
    ),
    "frame.language": Text("Language (语言 · 語言)", "语言 (Language)", "語言 (Language)"),
    "frame.bad_setting": Text(
        "Link parameter '{param}': unknown value {value!r}; expected one of: {choices}. Using the default.",
        "链接参数 '{param}'：未知的值 {value!r}，应为 {choices} 之一。改用默认值。",
        "連結參數 '{param}'：未知的值 {value!r}，應為 {choices} 之一。改用預設值。",
    ),
    "frame.palette": Text("Colour palette", "配色", "配色"),
    "frame.palette_help": Text(
        "All four are readable with the common colour-vision deficiencies and in greyscale; Cividis is made for "
        "them. Signed numbers (scores) always use red–blue.",
        "四种配色对常见的色觉异常和灰度打印都清晰可读；Cividis 就是为此设计的。有正负的数（分数）总是用红–蓝配色。",
        "四種配色對常見的色覺異常和灰階列印都清晰可讀；Cividis 就是為此設計的。有正負的數（分數）總是用紅–藍配色。",
    ),
    "palette.cividis": Text("Cividis (colour-blind safe)", "Cividis（色盲友好）", "Cividis（色盲友善）"),
    "palette.viridis": Text("Viridis", "Viridis", "Viridis"),
    "palette.magma": Text("Magma", "Magma", "Magma"),
    "palette.greys": Text("Greys (print)", "灰度（打印）", "灰階（列印）"),
    "frame.table": Text(
        "Numbers as a table (text alternative)", "数字表格（图表的文字版）", "數字表格（圖表的文字版）"
    ),
    "frame.table_too_large": Text(
        "Too many cells for a table: the downloads in 'Share and export' hold every number.",
        "单元格太多，不适合做成表格：“分享与导出”中的下载文件包含所有数字。",
        "儲存格太多，不適合做成表格：「分享與匯出」中的下載檔案包含所有數字。",
    ),
    "frame.controls": Text("Controls", "控件", "控制項"),
    "frame.presentation": Text("Presentation mode", "演示模式", "簡報模式"),
    "frame.presentation_help": Text(
        "Large type and figures for a projector; the controls fold away above the results.",
        "为投影仪放大文字和图表；控件折叠到结果上方。",
        "為投影機放大文字和圖表；控制項摺疊到結果上方。",
    ),
    # ----- page titles and introductions -----------------------------------------------------------------------
    "home.title": Text("attnviz", "attnviz", "attnviz"),
    "home.intro": Text(
        "Attention mechanisms you can see: type numbers or a sentence, pick a scoring function and masks, and "
        "watch what PyTorch computes, step by step.",
        "看得见的注意力机制：输入数字或一句话，选择评分函数和掩码，一步一步看 PyTorch 算出了什么。",
        "看得見的注意力機制：輸入數字或一句話，選擇評分函數和遮罩，一步一步看 PyTorch 算出了什麼。",
    ),
    "self.title": Text("Self-attention", "自注意力", "自注意力"),
    "self.intro": Text(
        "Every token of one sequence is a query, a key and a value: each token looks at all the others and blends "
        "their values by how well they match.",
        "同一个序列的每个词元既是查询，也是键和值：每个词元查看所有其他词元，并按匹配程度混合它们的值。",
        "同一個序列的每個詞元既是查詢，也是鍵和值：每個詞元查看所有其他詞元，並按匹配程度混合它們的值。",
    ),
    "cross.title": Text("Cross-attention", "交叉注意力", "交叉注意力"),
    "cross.intro": Text(
        "Queries come from one sequence (e.g. the target sentence), keys and values from another (the source): the "
        "output has one row per query, blended from the source's values.",
        "查询来自一个序列（例如目标句），键和值来自另一个序列（源句）：输出每个查询一行，由源句的值混合而成。",
        "查詢來自一個序列（例如目標句），鍵和值來自另一個序列（源句）：輸出每個查詢一列，由源句的值混合而成。",
    ),
    "kernel.title": Text("Kernel attention", "核注意力", "核注意力"),
    "kernel.intro": Text(
        "Nadaraya–Watson regression: a query's prediction is the average of the training values, weighted by a "
        "kernel of the distance between the query and each training key.",
        "Nadaraya–Watson 回归：查询的预测值是训练值的加权平均，权重由查询与每个训练键之间距离的核函数给出。",
        "Nadaraya–Watson 迴歸：查詢的預測值是訓練值的加權平均，權重由查詢與每個訓練鍵之間距離的核函數給出。",
    ),
    "model.title": Text("Pretrained model", "预训练模型", "預訓練模型"),
    "model.intro": Text(
        "The 72 real attention heads (6 layers × 12 heads) of all-MiniLM-L6-v2, a small BERT, run on your sentence "
        "by attnviz's own attention code: every head at a glance, one head up close, and one token's q·k worked out.",
        "all-MiniLM-L6-v2（一个小型 BERT）的 72 个真实注意力头（6 层 × 12 头），由 attnviz 自己的注意力代码在你的句子上"
        "运行：一眼看遍所有头，近看一个头，并逐步算出一个词元的 q·k。",
        "all-MiniLM-L6-v2（一個小型 BERT）的 72 個真實注意力頭（6 層 × 12 頭），由 attnviz 自己的注意力程式碼在你的句子上"
        "執行：一眼看遍所有頭，近看一個頭，並逐步算出一個詞元的 q·k。",
    ),
    # ----- home page -------------------------------------------------------------------------------------------
    "home.soft_addressing": Text("Attention is soft addressing", "注意力是一种软寻址", "注意力是一種軟定址"),
    "home.soft_addressing_text": Text(
        "Think of a memory where every item is stored as a **key** (its address) and a **value** (its content). "
        "An ordinary lookup takes the one item whose key equals the query. Attention instead compares the **query** "
        "with *every* key, turns the similarities into weights that sum to 1 (a softmax), and returns the weighted "
        "sum of *all* the values. The weights are where the model is paying attention.",
        "设想一个存储器，每一项都以**键**（它的地址）和**值**（它的内容）存放。普通的查找只取键与查询完全相等的那一项。"
        "注意力则把**查询**与*每一个*键比较，把相似度变成总和为 1 的权重（softmax），再返回*所有*值的加权和。"
        "权重就是模型注意力所在的地方。",
        "設想一個記憶體，每一項都以**鍵**（它的位址）和**值**（它的內容）存放。普通的查找只取鍵與查詢完全相等的那一項。"
        "注意力則把**查詢**與*每一個*鍵比較，把相似度變成總和為 1 的權重（softmax），再返回*所有*值的加權和。"
        "權重就是模型注意力所在的地方。",
    ),
    "home.example": Text(
        "A worked example: predicting weight from waist size",
        "一个算例：由腰围预测体重",
        "一個算例：由腰圍預測體重",
    ),
    "home.example_text": Text(
        "Three people have waists **51, 56, 58** (the keys) and weigh **40, 43, 48** (the values). What should we "
        "predict for a waist of **57** (the query)? Score each key with a Gaussian kernel,",
        "三个人的腰围是 **51、56、58**（键），体重是 **40、43、48**（值）。腰围 **57**（查询）应该预测多少体重？"
        "用高斯核给每个键打分，",
        "三個人的腰圍是 **51、56、58**（鍵），體重是 **40、43、48**（值）。腰圍 **57**（查詢）應該預測多少體重？"
        "用高斯核給每個鍵打分，",
    ),
    "home.example_chart": Text(
        "Weights of the query 57 over the three keys",
        "查询 57 在三个键上的权重",
        "查詢 57 在三個鍵上的權重",
    ),
    "home.explore": Text("Explore", "开始探索", "開始探索"),
    "home.open": Text("Open", "打开", "開啟"),
    "home.card_self": Text(
        "A sentence or a matrix attends to itself: scoring functions, temperature, causal and length masks, "
        "projections and several heads.",
        "一个句子或一个矩阵关注它自己：评分函数、温度、因果掩码和长度掩码、投影以及多头。",
        "一個句子或一個矩陣關注它自己：評分函數、溫度、因果遮罩和長度遮罩、投影以及多頭。",
    ),
    "home.card_cross": Text(
        "A target sentence attends over a source sentence; queries and key/value matrices of different lengths; "
        "the residual E + ΔE.",
        "目标句关注源句；查询与键/值矩阵长度可以不同；残差 E + ΔE。",
        "目標句關注源句；查詢與鍵/值矩陣長度可以不同；殘差 E + ΔE。",
    ),
    "home.card_kernel": Text(
        "Nadaraya–Watson regression: kernels, bandwidth, the weights behind each prediction, and learning σ.",
        "Nadaraya–Watson 回归：核函数、带宽、每个预测背后的权重，以及学习 σ。",
        "Nadaraya–Watson 迴歸：核函數、頻寬、每個預測背後的權重，以及學習 σ。",
    ),
    "home.card_model": Text(
        "The 72 real heads of a small BERT (all-MiniLM-L6-v2) on your sentence, offline: every head at once, "
        "one head up close, and one token's q·k worked out.",
        "小型 BERT（all-MiniLM-L6-v2）在你的句子上的 72 个真实注意力头，离线运行：一次看全部头，近看一个头，"
        "并算出一个词元的 q·k。",
        "小型 BERT（all-MiniLM-L6-v2）在你的句子上的 72 個真實注意力頭，離線執行：一次看全部頭，近看一個頭，"
        "並算出一個詞元的 q·k。",
    ),
    **ATTENTION,
    **KERNEL,
    **MODEL,
    **EXPLAIN,
    **FIGURES,
    **PRESETS,
    **ERRORS,
}
