"""Admin forms. Each validates by building the runtime object (``assembly``), so
an operator sees the rule and message the runtime enforces.

``validation`` maps runtime errors to form fields; ``hosted`` holds the hosted
tool form; ``capabilities`` the model capability form and the models the
catalog knows; ``policies`` the policy form (its typed
fields: ``policy_fields``; configs as the fields see them: ``policy_configs``,
``policy_conditions``); ``tools`` the function tool form, ``tool_editors``
its parameter descriptions and ``example_editors`` its examples; ``editors``
what the structured editors share; ``sections`` the section form and its
link formsets; ``catalog`` the prompt template form and the preview form.
"""

from .capabilities import ModelCapabilityForm, model_names, model_warnings
from .catalog import (
    PreviewForm,
    PromptSectionFormSet,
    PromptTemplateForm,
    pretty,
)
from .fields import CountryField, DatalistInput, country_choices
from .handler_params import (
    HandlerParameter,
    handler_parameters,
    handler_parameters_panel,
)
from .hosted import HostedToolDefinitionForm
from .policies import PolicyDefinitionForm
from .policy_fields import policy_fieldsets
from .sections import (
    SectionDefinitionForm,
    SectionHostedToolFormSet,
    SectionToolFormSet,
)
from .tools import ToolDefinitionForm
from .validation import refuse_breaking, runtime_error, validated

__all__ = [
    "CountryField",
    "DatalistInput",
    "HandlerParameter",
    "HostedToolDefinitionForm",
    "ModelCapabilityForm",
    "PolicyDefinitionForm",
    "PreviewForm",
    "PromptSectionFormSet",
    "PromptTemplateForm",
    "SectionDefinitionForm",
    "SectionHostedToolFormSet",
    "SectionToolFormSet",
    "ToolDefinitionForm",
    "country_choices",
    "handler_parameters",
    "handler_parameters_panel",
    "model_names",
    "model_warnings",
    "policy_fieldsets",
    "pretty",
    "refuse_breaking",
    "runtime_error",
    "validated",
]
