"""Messages of the pretrained-model page."""

from __future__ import annotations

from attnviz.i18n import Text as _

MODEL: dict[str, _] = {
    "model.loading": _(
        "Loading the pretrained model ({model}, 90 MB, from the installed package)…",
        "正在加载预训练模型（{model}，90 MB，来自已安装的包）…",
        "正在載入預訓練模型（{model}，90 MB，來自已安裝的套件）…",
    ),
    "model.sentence_help": _(
        "Split into WordPiece tokens by the model's own tokenizer (lower-cased; rare words become several pieces "
        "such as 'un', '##bel'). Up to {limit} tokens with [CLS] and [SEP].",
        "由模型自己的分词器切分成 WordPiece 词元（转为小写；生僻词会变成几段，例如 'un'、'##bel'）。"
        "连同 [CLS] 和 [SEP] 最多 {limit} 个词元。",
        "由模型自己的斷詞器切分成 WordPiece 詞元（轉為小寫；罕見詞會變成幾段，例如 'un'、'##bel'）。"
        "連同 [CLS] 和 [SEP] 最多 {limit} 個詞元。",
    ),
    "model.pair": _("Second sentence (optional)", "第二句（可选）", "第二句（選填）"),
    "model.pair_help": _(
        "With a second sentence the model reads [CLS] first [SEP] second [SEP], as in BERT's sentence-pair tasks; "
        "the view can then show only the attention from one sentence to the other.",
        "有第二句时，模型读入 [CLS] 第一句 [SEP] 第二句 [SEP]，就像 BERT 的句对任务；视图随后可以只显示一句对另一句的注意力。",
        "有第二句時，模型讀入 [CLS] 第一句 [SEP] 第二句 [SEP]，就像 BERT 的句對任務；視圖隨後可以只顯示一句對另一句的注意力。",
    ),
    "model.sentence_error": _("Sentence: {error}", "句子：{error}", "句子：{error}"),
    "model.layer": _("Layer", "层", "層"),
    "model.heads": _("Heads (one, or several to average)", "头（一个，或多个取平均）", "頭（一個，或多個取平均）"),
    "model.no_head": _(
        "Choose at least one head; showing head {head} until you do.",
        "请至少选择一个头；在此之前显示头 {head}。",
        "請至少選擇一個頭；在此之前顯示頭 {head}。",
    ),
    "model.hide_special": _("Hide [CLS] and [SEP]", "隐藏 [CLS] 和 [SEP]", "隱藏 [CLS] 和 [SEP]"),
    "model.renormalise": _("Renormalise rows", "重新归一化各行", "重新正規化各列"),
    "model.renormalise_help": _(
        "Rescale each row of what is shown so that it sums to 1 again (after hiding tokens, or between two "
        "sentences). The model itself never does this.",
        "把显示出来的每一行重新缩放，使其和再次为 1（隐藏词元后，或在两句之间）。模型本身从不这样做。",
        "把顯示出來的每一列重新縮放，使其和再次為 1（隱藏詞元後，或在兩句之間）。模型本身從不這樣做。",
    ),
    "model.between": _("Attention between the sentences", "两句之间的注意力", "兩句之間的注意力"),
    "model.part_all": _("all tokens", "所有词元", "所有詞元"),
    "model.part_ab": _("first → second", "第一句 → 第二句", "第一句 → 第二句"),
    "model.part_ba": _("second → first", "第二句 → 第一句", "第二句 → 第一句"),
    "model.token": _("Token to follow (neuron view)", "要跟踪的词元（神经元视图）", "要追蹤的詞元（神經元視圖）"),
    "model.head_n": _("head {n}", "头 {n}", "頭 {n}"),
    "model.finder": _(
        "**Heads worth a look** in this sentence: the head that gives each target the most weight (its mean weight "
        "over the words).",
        "这个句子里**值得一看的头**：给每种目标最多权重的头（括号内是它在各词上的平均权重）。",
        "這個句子裡**值得一看的頭**：給每種目標最多權重的頭（括號內是它在各詞上的平均權重）。",
    ),
    "model.finder_line": _(
        "- {target}: layer {layer}, head {head} ({weight})",
        "- {target}：第 {layer} 层，头 {head}（{weight}）",
        "- {target}：第 {layer} 層，頭 {head}（{weight}）",
    ),
    "model.pattern.previous": _("the previous token", "前一个词元", "前一個詞元"),
    "model.pattern.next": _("the next token", "后一个词元", "後一個詞元"),
    "model.pattern.self": _("itself", "自己", "自己"),
    "model.pattern.cls": _("[CLS]", "[CLS]", "[CLS]"),
    "model.pattern.sep": _("[SEP]", "[SEP]", "[SEP]"),
    "model.nothing": _(
        "Nothing to show: every token is hidden. Show [CLS] and [SEP] or add words.",
        "没有可显示的内容：所有词元都被隐藏了。请显示 [CLS] 和 [SEP]，或添加一些词。",
        "沒有可顯示的內容：所有詞元都被隱藏了。請顯示 [CLS] 和 [SEP]，或新增一些詞。",
    ),
    "model.pooled": _(
        "{count} tokens: each thumbnail is max-pooled to {size} cells a side, so thin patterns stay visible. The head "
        "view below has every token.",
        "{count} 个词元：每个缩略图按最大值池化到每边 {size} 格，细的图案仍然看得见。下面的单头视图包含全部词元。",
        "{count} 個詞元：每個縮圖按最大值池化到每邊 {size} 格，細的圖案仍然看得見。下面的單頭視圖包含全部詞元。",
    ),
    "model.export_caption": _(
        "PNG: the camera icon of any chart. CSV: the head view as shown. NPZ: all {count} heads' weights with the "
        "tokens (numpy.load, no pickle needed).",
        "PNG：任意图表的相机图标。CSV：当前显示的单头视图。NPZ：全部 {count} 个头的权重和词元（numpy.load 读取，无需 pickle）。",
        "PNG：任意圖表的相機圖示。CSV：目前顯示的單頭視圖。NPZ：全部 {count} 個頭的權重和詞元（numpy.load 讀取，無需 pickle）。",
    ),
    "model.download_csv": _("Download the head view (CSV)", "下载单头视图（CSV）", "下載單頭視圖（CSV）"),
    "model.download_npz": _("Download every head (NumPy .npz)", "下载所有头（NumPy .npz）", "下載所有頭（NumPy .npz）"),
    "model.which_one": _("head {head}", "头 {head}", "頭 {head}"),
    "model.which_average": _("average of heads {heads}", "头 {heads} 的平均", "頭 {heads} 的平均"),
    "model.head_view_title": _(
        "Head view: layer {layer}, {which}", "单头视图：第 {layer} 层，{which}", "單頭視圖：第 {layer} 層，{which}"
    ),
    "model.rows_short": _(
        "Rows sum to less than 1 here: the hidden tokens hold the rest of each row's weight.",
        "这里各行之和小于 1：其余的权重在被隐藏的词元上。",
        "這裡各列之和小於 1：其餘的權重在被隱藏的詞元上。",
    ),
    "model.neuron_heading": _(
        "Neuron view: '{token}' in layer {layer}, head {head}",
        "神经元视图：第 {layer} 层头 {head} 中的 '{token}'",
        "神經元視圖：第 {layer} 層頭 {head} 中的 '{token}'",
    ),
    "model.first_of_chosen": _(" (the first of the chosen heads)", "（所选头中的第一个）", "（所選頭中的第一個）"),
    "model.neuron_caption": _(
        "The query vector of '{token}' in head {head}{note}, every key, their products coordinate by coordinate, "
        "the scaled dot products and the softmax: the model's real numbers, over every token ([CLS] and [SEP] "
        "included, whatever the views above hide).",
        "头 {head}{note}中 '{token}' 的查询向量、所有的键、它们逐坐标的乘积、缩放后的点积以及 softmax："
        "都是模型的真实数字，覆盖所有词元（包括 [CLS] 和 [SEP]，不论上面的视图隐藏了什么）。",
        "頭 {head}{note}中 '{token}' 的查詢向量、所有的鍵、它們逐座標的乘積、縮放後的點積以及 softmax："
        "都是模型的真實數字，涵蓋所有詞元（包括 [CLS] 和 [SEP]，不論上面的視圖隱藏了什麼）。",
    ),
}
